package explain

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain/wire"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The served document lives in package wire (the scheduler imports only that); the CLI plans
// with it under these names.

// DebugKey is the /configz entry of the served document (wire.DebugKey).
const DebugKey = wire.DebugKey

// Reservations is the served document (wire.Reservations), with the CLI's reading of it.
type Reservations wire.Reservations

type (
	// Pin is one gang's pin (wire.Pin).
	Pin = wire.Pin
	// AssumedPod is one member placed on a node in the scheduler's memory only (wire.AssumedPod).
	AssumedPod = wire.AssumedPod
	// ReservedSlot is the room a pin reserves on one node (wire.ReservedSlot).
	ReservedSlot = wire.ReservedSlot
)

// Decode reads the served document out of a /configz response (wire.Decode).
func Decode(configz []byte) (*Reservations, error) {
	r, err := wire.Decode(configz)
	return (*Reservations)(r), err
}

// store loads the pins into a pin store, the one that answers planning in the scheduler:
// the room other gangs reserve is then counted exactly as the scheduler counts it.
func (r *Reservations) store() *placement.Store {
	s := placement.NewStore()
	if r == nil {
		return s
	}
	// The scheduler checked each reservation against its snapshot when it accepted it: the
	// copy accepts them all.
	unlimited := topology.Resources{}
	for _, p := range r.Pins {
		for _, sl := range p.Reserved {
			for name := range sl.Each {
				unlimited[name] = 1 << 50
			}
		}
	}
	capacity := func(string) (topology.Resources, int64, bool) { return unlimited, 1 << 40, true }
	for _, p := range r.Pins {
		res := placement.Reservation{}
		for _, sl := range p.Reserved {
			res[sl.Node] = placement.Slot{Count: sl.Members, Each: sl.Each}
		}
		remaining := 0
		if p.Forming {
			remaining = max(p.Remaining, 1)
		}
		s.Pin(placement.PinRequest{Gang: p.Gang, Owner: p.Owner, Key: p.TopologyKey, Domain: p.Domain,
			Reserved: res, Capacity: capacity, Remaining: remaining, MinMember: p.MinMember})
	}
	return s
}

// stale returns the UIDs of the assumed members of attempts that ended (nil when none).
func (r *Reservations) stale() map[types.UID]struct{} {
	if r == nil {
		return nil
	}
	var out map[types.UID]struct{}
	for _, a := range r.Assumed {
		if a.Stale {
			if out == nil {
				out = map[types.UID]struct{}{}
			}
			out[types.UID(a.UID)] = struct{}{}
		}
	}
	return out
}
