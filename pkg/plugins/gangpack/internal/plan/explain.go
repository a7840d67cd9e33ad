package plan

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Explanation is what PreFilter's planning would decide for a gang member now, computed by
// PreFilter's own steps (revalidate, gate, choose) with the planner's Effects: the caller's
// (explain's pins land on a private copy of the served ones), nothing waits, nothing is woken,
// no quality gauge moves. `kubectl ome explain` shows it.
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
	// domains, the most preferred then best fit scored first), preferred (the members'
	// preference chose it over best fit) or best-fit.
	Source string
	// Fitting counts the domains with room for the whole gang (outside reservations).
	Fitting int
	// Status is the scheduler's message for the wait when Domain is "".
	Status *fwk.Status
	// Preferences are the preferences of the fitting domains (docs/design.md §4.1); nil when
	// the members have none (or every fitting domain has the same). BestFit is then the domain
	// best fit alone would choose: when it differs from Domain, the preference decided.
	Preferences map[string]int64
	BestFit     string
	// Gated is set when the gang waits before any domain is chosen (a split, missing members,
	// a sibling or spread anchor to place first): Status says which.
	Gated bool
}

// Explain plans the gang member as Plan would, with the planner's Effects, so the planner it
// runs on must act on a copy of the pins (explain/ builds one so; the plugin's never calls
// Explain), and no quality gauge moves (see Explanation):
// the tables come from one planning over every node, the decision from Plan's own steps on a
// fresh cycle state. Placement group partners are planned as gangs of their own.
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
		Fitting: topology.CountFitting(topology.Without(rooms, r.Failed), p.need)}
	if gateStatus != nil {
		ex.Status, ex.Gated = gateStatus, true
		return ex
	}
	cs := framework.NewCycleState()
	d := pl.newCycle(logger, pod, info, all, r, pl.fx)
	_, st := d.plan(cs, r.Pin)
	ex.Domain, ex.Source, ex.Status = d.decided(cs, r.Pin, st)
	ex.Preferences, ex.BestFit = d.prefs, d.bestFitAlone
	return ex
}

// decided reads what the cycle's planning decided from its cycle state: the pinned domain,
// or for a deferred plan the domain best fit scores first, and how it was found (Source).
func (p *cycle) decided(cs fwk.CycleState, read *placement.Commitment, st *fwk.Status) (string, string, *fwk.Status) {
	source := "best-fit"
	if c, ok := p.pl.read.Commitment(p.info.Key); ok && read != nil && c.ID == read.ID && c.Key == p.info.TopologyKey {
		source = "existing"
	} else if len(p.placed) > 0 {
		source = "adopted"
	} else if gang.HardSpread(p.pod) {
		source = "deferred"
	}
	if pin := ReadPin(cs); pin != nil {
		if p.pinSource == "preferred" {
			source = "preferred"
		}
		return pin.Domain, source, nil
	}
	if def := ReadDeferred(cs); def != nil {
		rooms := topology.Rooms(def.Planned)
		rank := p.softSpreadRank(topPreferred(rooms, def.Need, def.Preference))
		d, _ := topology.BestFitPreferred(rooms, def.Need, preferOf(def.Preference), rank)
		if def.Preference != nil {
			p.bestFitAlone, _ = topology.BestFitRanked(rooms, def.Need, rank)
		}
		return d, "deferred", nil
	}
	return "", source, st
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
