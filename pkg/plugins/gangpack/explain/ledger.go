package explain

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Args are OMEGangPack's plugin arguments.
type Args = gang.Args

// readOnly answers planning's reads from a copy of the scheduler's pins: a pin store loaded
// with them. Explain's decisions land on that copy (scratch).
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

var _ plan.Reader = (*readOnly)(nil)

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

// scratch carries Explain's decisions out on the private copy of the served pins the reads
// come from (readOnly.store): Choose, Pin and PinGroup pin there, a dropped pin is released
// there. Nothing waits and nothing is woken.
type scratch struct {
	plan.NoEffects
	store *placement.Store
}

var _ plan.Effects = (*scratch)(nil)

func (s *scratch) Choose(req placement.ChooseRequest, _ gang.Info) placement.ChooseResult {
	return s.store.Choose(req)
}
func (s *scratch) Pin(req placement.PinRequest, _ gang.Info, _ string) (placement.Commitment, placement.PinOutcome) {
	return s.store.Pin(req)
}
func (s *scratch) PinGroup(_ string, reqs []placement.PinRequest, _ []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	cs, outcome, _ := s.store.PinGroup(reqs)
	return cs, outcome
}
func (s *scratch) Reserve(_ klog.Logger, key string, id uint64, r placement.Reservation, c placement.Capacity) bool {
	ok, _ := s.store.Reserve(key, id, r, c)
	return ok
}
func (s *scratch) Regrow(key string, id uint64, remaining int) (placement.Commitment, bool) {
	return s.store.Regrow(key, id, remaining)
}
func (s *scratch) Drop(_ klog.Logger, c placement.Commitment, _ gang.Drop) bool {
	s.store.Release(c.Gang, c.ID, nil)
	return false
}
