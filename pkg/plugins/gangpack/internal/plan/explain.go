package plan

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Explanation is what PreFilter's planning would decide for a gang member now, computed by
// the same steps (gate, member room, best fit, the no-fit messages) without changing
// anything: no pin, no wait recorded, no wake-up, no metric. `kubectl ome explain` shows it.
type Explanation struct {
	Need   int
	Placed int
	// Gang is the gang as planning sees it: its shapes, need and whether members stay apart.
	Gang topology.Gang
	// Nodes are the labelled nodes as planning saw them: free room with the other forming
	// gangs' reservations set aside.
	Nodes []topology.Node
	// Plans is every domain's plan over all nodes (room, candidates, nodes).
	Plans map[string]*topology.DomainPlan
	// RawRooms is each domain's room if no other gang reserved any.
	RawRooms map[string]int
	// MemberRooms is, per domain, how many members of the gang's shape its nodes can take,
	// without the "whole gang can form" condition or the per-node cap at need.
	MemberRooms map[string]int
	// Failed are the domains the gang's attempts failed in (left out of best fit).
	Failed map[string]struct{}
	// Domain is the domain the member would be placed in; "" when it would wait.
	Domain string
	// Source says how Domain was found: existing (the gang's pin), adopted (its placed
	// members' domain), deferred (a hard-spread anchor: the filters pick among the fitting
	// domains, best fit scored first) or best-fit.
	Source string
	// Fitting counts the domains with room for the whole gang (outside reservations).
	Fitting int
	// Status is the scheduler's message for the wait when Domain is "".
	Status *fwk.Status
	// Gated is set when the gang waits before any domain is chosen (a split, missing members,
	// a sibling or spread anchor to place first): Status says which.
	Gated bool
}

// Explain plans the gang member as Plan would, changing nothing (see Explanation). Placement
// group partners are planned as gangs of their own.
func (pl *Planner) Explain(logger klog.Logger, pod *v1.Pod, info gang.Info, all []fwk.NodeInfo) Explanation {
	r := pl.reading(pod, info, all)
	p := pl.newCycle(logger, pod, info, all, r, NoEffects{})
	gateStatus := p.gate()
	if p.templates == nil { // a split gang: plan its rooms for the pod alone
		p.templates, p.need = []*v1.Pod{pod}, max(info.MinMember-len(p.placed), 1)
	}
	p.buildGang()
	plans := p.planOver(p.all)
	rooms := topology.Rooms(plans)
	ex := Explanation{Need: p.need, Placed: len(p.placed), Gang: p.gang, Nodes: p.tnodes, Plans: plans,
		RawRooms: p.rawRoomsWhereReserved(rooms), MemberRooms: memberRooms(&p.gang, p.tnodes), Failed: r.Failed,
		Fitting: topology.CountFitting(without(rooms, r.Failed), p.need)}
	if gateStatus != nil {
		ex.Status, ex.Gated = gateStatus, true
		return ex
	}
	ex.Domain, ex.Source, ex.Status = p.explainChoice(r.Pin, plans, rooms)
	return ex
}

// explainChoice is choose without side effects: the existing pin while it is not stale, the
// placed members' domain, or the best fit of the unpinned gang.
func (p *cycle) explainChoice(pin *placement.Commitment, plans map[string]*topology.DomainPlan, rooms map[string]int) (string, string, *fwk.Status) {
	if pin != nil && pin.Key == p.info.TopologyKey {
		if _, stale := p.staleByRoom(*pin, plans); !stale {
			dp := plans[pin.Domain]
			if len(p.placed) > 0 && dp.Room < p.need {
				return "", "existing", p.short(nil, msg.PinnedShort(pin.Domain, p.info.Key, dp.Room, p.need), pin.Domain, dp.Room)
			}
			return p.explainNarrow(pin.Domain, "existing", plans)
		}
	}
	if len(p.placed) > 0 {
		return p.explainAdopt(plans)
	}
	if p.pl.atHoldCap(p.info) {
		return "", "best-fit", fwk.NewStatus(fwk.Unschedulable, msg.HoldCap(p.info.Namespace, p.pl.read.FormingIn(p.info.Namespace+"/", p.info.Key)))
	}
	failed := p.failed
	fitting := without(rooms, failed)
	d, ok := topology.BestFitRanked(fitting, p.need, p.softSpreadRank(fitting))
	if !ok && len(fitting) < len(rooms) { // the lap wraps; resting domains stay out
		failed = p.pl.read.Resting(p.info.Owner(), p.info.TopologyKey)
		fitting = without(rooms, failed)
		d, ok = topology.BestFitRanked(fitting, p.need, p.softSpreadRank(fitting))
	}
	source := "best-fit"
	if gang.HardSpread(p.pod) {
		source = "deferred"
	}
	if ok {
		return p.explainNarrow(d, source, plans)
	}
	if rd, rests := p.restingDomain(rooms, failed); rests {
		return "", source, fwk.NewStatus(fwk.Unschedulable, msg.NoRoomResting(p.info.Key, rd))
	}
	_, _, st := p.noFitVerdict(rooms)
	return "", source, st
}

// explainAdopt is adopt without side effects.
func (p *cycle) explainAdopt(plans map[string]*topology.DomainPlan) (string, string, *fwk.Status) {
	d := p.placed[0].Domain
	room := 0
	if dp := plans[d]; dp != nil {
		room = dp.Room
	}
	if room >= p.need {
		return p.explainNarrow(d, "adopted", plans)
	}
	failed := p.pl.read.FailedHas(p.info.Owner(), placement.DomainRef{Key: p.info.TopologyKey, Value: d})
	if !failed && p.rawRooms(map[string]int{d: room})[d] >= p.need {
		return "", "adopted", fwk.NewStatus(fwk.Unschedulable, msg.AdoptReserved(d, p.info.Key))
	}
	return "", "adopted", p.short(nil, msg.AdoptedShort(d, p.info.Key, room, p.need), d, room)
}

// explainNarrow is narrow's check: the member needs a candidate node in the domain.
func (p *cycle) explainNarrow(d, source string, plans map[string]*topology.DomainPlan) (string, string, *fwk.Status) {
	if dp := plans[d]; dp == nil || len(dp.Candidates) == 0 {
		return "", source, fwk.NewStatus(fwk.Unschedulable, msg.NoFeasibleNode(d, p.info.Key))
	}
	return d, source, nil
}

// rawRoomsWhereReserved is rawRooms planned again only for the domains where other gangs
// reserve room: elsewhere setting reservations aside changes nothing.
func (p *cycle) rawRoomsWhereReserved(rooms map[string]int) map[string]int {
	if len(p.others) == 0 {
		return rooms
	}
	touched := map[string]struct{}{}
	for _, n := range p.tnodes {
		if _, ok := p.others[n.Name]; ok {
			touched[n.Domain] = struct{}{}
		}
	}
	var set []fwk.NodeInfo
	for _, ni := range p.all {
		if n := ni.Node(); n != nil {
			if _, ok := touched[n.Labels[p.info.TopologyKey]]; ok {
				set = append(set, ni)
			}
		}
	}
	out := make(map[string]int, len(rooms))
	for d, r := range rooms {
		out[d] = r
	}
	for d, r := range topology.Rooms(topology.Plan(&p.gang, p.topologyNodes(set, true, nil))) {
		out[d] = r
	}
	return out
}
