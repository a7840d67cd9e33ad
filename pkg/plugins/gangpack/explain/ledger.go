package explain

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Args are OMEGangPack's plugin arguments.
type Args = gang.Args

// readOnly answers planning from a copy of the scheduler's pins: the reads come from a pin
// store loaded with them, and every decision is refused (Explain makes none).
type readOnly struct {
	store *placement.Store
	now   time.Time
	// stale are the assumed members of attempts that ended (AssumedPod.Stale): on their
	// nodes, but not placed, as the scheduler's ledger counts them.
	stale map[types.UID]struct{}
}

// placed is the gang's live members on the snapshot's nodes, the stale ones left out.
func (l *readOnly) placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	out := gang.OnNodes(all, g)
	if len(l.stale) == 0 {
		return out
	}
	kept := out[:0]
	for _, m := range out {
		if _, ok := l.stale[m.Pod.UID]; !ok {
			kept = append(kept, m)
		}
	}
	return kept
}

var _ plan.Ledger = (*readOnly)(nil)

func (l *readOnly) Read(g gang.Info, all []fwk.NodeInfo) gang.Reading {
	r := gang.Reading{Generation: l.store.Generation(), Others: l.store.ReservedExcept(g.Key), Placed: l.placed(g, all), Now: l.now}
	if c, ok := l.store.Get(g.Key); ok {
		r.Pin = &c
	}
	return r
}

func (l *readOnly) Commitment(key string) (placement.Commitment, bool) { return l.store.Get(key) }
func (l *readOnly) Pinned(key string) bool                             { return l.store.Has(key) }
func (l *readOnly) Generation() uint64                                 { return l.store.Generation() }
func (l *readOnly) ReservedExcept(except string) map[string]placement.Reserved {
	return l.store.ReservedExcept(except)
}
func (l *readOnly) FormingIn(prefix, except string) int {
	return l.store.FormingWithPrefix(prefix, except)
}

// Failed and Resting: failed domains live in the scheduler's memory and are not served; a
// gang is explained as if none of its attempts had failed.
func (l *readOnly) Failed(placement.GangOwner, string) map[string]struct{}  { return nil }
func (l *readOnly) FailedHas(placement.GangOwner, placement.DomainRef) bool { return false }
func (l *readOnly) Resting(placement.GangOwner, string) map[string]struct{} { return nil }
func (l *readOnly) Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed    { return l.placed(g, all) }
func (l *readOnly) WaiterNodes(gang.Info, uint64) []string                  { return nil }

func (l *readOnly) Choose(placement.ChooseRequest, gang.Info) placement.ChooseResult {
	return placement.ChooseResult{}
}
func (l *readOnly) Pin(placement.PinRequest, gang.Info, string) (placement.Commitment, placement.PinOutcome) {
	return placement.Commitment{}, placement.HeldByOther
}
func (l *readOnly) PinGroup(string, []placement.PinRequest, []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	return nil, placement.HeldByOther
}
func (l *readOnly) Reserve(klog.Logger, string, uint64, placement.Reservation, placement.Capacity) bool {
	return false
}
func (l *readOnly) Regrow(string, uint64, int) (placement.Commitment, bool) {
	return placement.Commitment{}, false
}
func (l *readOnly) Drop(klog.Logger, placement.Commitment, gang.Drop) bool { return false }
func (l *readOnly) WrapFailed(placement.GangOwner)                         {}
func (l *readOnly) ParkBlocked(klog.Logger, *v1.Pod, uint64)               {}
func (l *readOnly) Await(_, _ *v1.Pod)                                     {}
func (l *readOnly) MembersMissing(string)                                  {}
func (l *readOnly) MembersComplete(klog.Logger, gang.Info, string, string) (int, bool) {
	return 0, false
}
func (l *readOnly) GroupWaits(string, string) (string, bool) { return "", false }
func (l *readOnly) GroupReady(string) bool                   { return false }
func (l *readOnly) ActivateGroup(klog.Logger, []types.NamespacedName, string) int {
	return 0
}
