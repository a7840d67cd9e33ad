package plan

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// A member with a hard (DoNotSchedule) topology spread constraint — a spread anchor — does not
// pin at PreFilter: PreFilter plans every domain that fits the gang and lets the framework's
// filters (PodTopologySpread among them) choose the node; Reserve then pins the domain of
// that node.

// deferredStateKey holds the deferred plan, written by deferredPlan, read by Reserve and
// PreScore.
const deferredStateKey fwk.StateKey = "gangpack.deferred-pin"

// Deferred is a deferred plan: candidate domains chosen before the spread filter ran.
type Deferred struct {
	Gang    gang.Info
	Need    int
	Planned map[string]*topology.DomainPlan
	// Reserve is the room the gang would reserve in each planned domain.
	Reserve map[string]placement.Reservation
	// Candidates are the nodes PreFilter narrowed the cycle to; Filter enforces them.
	Candidates sets.Set[string]
	// Preference is each planned domain's preference (prefer.go); nil when the members have
	// none. PreScore orders the domains by it before best fit.
	Preference map[string]int64
}

func (s *Deferred) Clone() fwk.StateData { return s }

func ReadDeferred(cs fwk.CycleState) *Deferred {
	d, _ := gang.ReadState[*Deferred](cs, deferredStateKey)
	return d
}

// deferredPlan plans the candidate domains of a spread anchor without pinning.
func (p *cycle) deferredPlan(cs fwk.CycleState, plans map[string]*topology.DomainPlan) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	if st := p.holdCapped(); st != nil {
		return nil, st
	}
	rooms := topology.Rooms(plans)
	eff := rooms // counted outside the other gangs' reservations
	failed := p.failed
	eff1 := topology.Without(eff, failed)
	if topology.CountFitting(eff1, p.need) == 0 && len(eff1) < len(eff) {
		p.fx.WrapFailed(info.Owner()) // resting domains stay out
		failed = pl.read.Failed(info.Owner(), info.TopologyKey)
		eff1 = topology.Without(eff, failed)
	}
	planned := map[string]*topology.DomainPlan{}
	reserve := map[string]placement.Reservation{}
	cands := sets.New[string]()
	for d, room := range eff1 {
		if room >= p.need {
			planned[d] = plans[d]
			reserve[d] = p.reservation(d)
			cands.Insert(plans[d].Candidates...)
		}
	}
	if len(planned) == 0 {
		if st := p.resting(rooms, failed); st != nil {
			return nil, st
		}
		return nil, p.noFit(rooms, failed, "")
	}
	if cands.Len() == 0 {
		metrics.CountPin(metrics.PinNoFit)
		p.logNoFit(rooms, failed, "no_candidates")
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.NoCandidates(info.Key, len(planned)))
	}
	p.prefs = p.preferences(topology.Rooms(planned))
	cs.Write(deferredStateKey, &Deferred{Gang: info, Need: p.need, Planned: planned, Reserve: reserve, Candidates: cands, Preference: p.prefs})
	if v := p.logger.V(4); v.Enabled() {
		plannedRooms := make(map[string]int, len(planned))
		for d, dp := range planned {
			plannedRooms[d] = dp.Room
		}
		v.Info("gangpack.pinGang.deferred", "pod", klog.KObj(p.pod), "gang", info.Key, "need", p.need,
			"planned", plannedRooms, "candidates", cands.Len(), "preference", p.prefs)
	}
	return &fwk.PreFilterResult{NodeNames: cands}, nil
}
