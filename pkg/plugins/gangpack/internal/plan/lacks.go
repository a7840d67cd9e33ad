package plan

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Preemption's questions to the planner, answered without changing anything: does a gang (or
// a placement group) lack room, on which nodes, and is room coming back from Terminating pods.

// roomComing plans the gang over set again, counting the room Terminating pods give back.
// When a domain then fits the whole gang, the gang waits for them instead of preempting.
func (p *cycle) roomComing(set []fwk.NodeInfo, now time.Time) *gang.RoomComing {
	back := gang.ReturningRoom(set, now)
	if len(back) == 0 {
		return nil
	}
	domain, fits := topology.BestFit(topology.Rooms(p.planOverReturning(set, back)), p.need)
	if !fits {
		return nil
	}
	return comingIn(back, domain, p.tnodes, func(n topology.Node) (string, string) { return n.Name, n.Domain })
}

// LacksRoom plans the gang as PreFilter did, changing nothing, and returns its shortfall when
// no domain has room for it even when other gangs' reservations are ignored (then a
// reservation, a spread rule, a sibling wait or missing members is not why it failed). A gang
// with placed members may only have their domain freed; a pinned gang asks only when it is
// degraded and pinned to its bound members' domain (repair, see repairs). Room
// Terminating pods give back counts as coming: when a domain fits with it, RoomComing says
// where, and the gang waits instead of preempting. A partner of a placement group without
// placed members asks for the whole group (groupLacksRoom); one with placed members asks for
// itself, in its own domain, like a gang.
func (pl *Planner) LacksRoom(logger klog.Logger, pod *v1.Pod, info gang.Info, all []fwk.NodeInfo, now time.Time) (*gang.Shortfall, *gang.RoomComing) {
	p := pl.quiet(logger, pod, info, all)
	if info.Group != nil && len(p.placed) == 0 {
		return pl.groupLacksRoom(p, now)
	}
	if c, pinned := pl.read.Commitment(info.Key); pinned && !p.repairs(c) {
		return nil, nil // the gang has a domain: it waits there
	}
	if info.Group != nil {
		if _, ready := pl.groupReady(info); !ready {
			return nil, nil // the partner waits for its group, not for room
		}
	}
	if p.split() || p.gate() != nil || pl.atHoldCap(info) {
		return nil, nil
	}
	p.buildGang()
	if p.devErr != nil {
		return nil, nil // its devices cannot be counted: it waits with that reason
	}
	set := p.all
	if len(p.placed) > 0 { // placed members never move: only their domain can be freed
		set = p.nodesOfDomain(info.TopologyKey, p.placed[0].Domain)
	}
	if _, fits := topology.BestFit(topology.Rooms(p.planOver(set)), p.need); fits {
		return nil, nil
	}
	if w := p.roomComing(set, now); w != nil {
		return nil, w
	}
	sf := &gang.Shortfall{Info: info, Gang: p.gang, Nodes: preemptNodes(p, set), Placed: len(p.placed)}
	p.deviceSlots(sf)
	return sf, nil
}

// repairs reports whether a pinned gang may preempt for its missing members: its pin is the
// domain its placed members sit in, under its topology key, and some but fewer than minMember
// of them are bound (a degraded gang repairs in place; a surplus member of a whole gang does
// not). Any other pinned gang waits in its domain.
func (p *cycle) repairs(c placement.Commitment) bool {
	if len(p.placed) == 0 || p.split() || c.Key != p.info.TopologyKey || c.Domain != p.placed[0].Domain {
		return false
	}
	bound := p.boundPlaced()
	return bound > 0 && bound < p.info.MinMember
}

// quiet is a planner for preemption's questions: it changes nothing (NoEffects).
func (pl *Planner) quiet(logger klog.Logger, pod *v1.Pod, info gang.Info, all []fwk.NodeInfo) *cycle {
	// Only the generation and the placed members are read: the other gangs' reservations are
	// not set aside (the question is whether room exists at all).
	r := gang.Reading{Generation: pl.read.Generation(), Placed: pl.read.Placed(info, all)}
	return pl.newCycle(logger, pod, info, all, r, NoEffects{})
}

// preemptNodes translates the labelled nodes of set for the preemption arithmetic: Fits
// reports only what evicting pods cannot change (resources are judged from Free).
func preemptNodes(p *cycle, set []fwk.NodeInfo) []topology.Node {
	out := make([]topology.Node, 0, len(set))
	for _, ni := range set {
		node := ni.Node()
		if node == nil || node.Labels[p.info.TopologyKey] == "" {
			continue
		}
		free, freePods := gang.NodeFree(ni, p.resources)
		fits := make([]bool, len(p.shapeFits))
		for s, f := range p.shapeFits {
			fits[s] = f.Fits(ni, f.Request, 1)
		}
		out = append(out, topology.Node{Name: node.Name, Domain: node.Labels[p.info.TopologyKey], Free: free, FreePods: freePods, Fits: fits})
	}
	return out
}

// groupLacksRoom is gangLacksRoom for a partner of a placement group: the whole group is the
// preemptor, and a candidate is one group domain where every partner fits whole once the
// victims are gone. It applies while the group has no domain yet (no partner pinned or
// placed), every partner is ready, and no group domain fits the group even when other gangs'
// reservations are ignored. A group does not hold the freed domain: its partners wait on the
// victims (one record for the group) and then plan as usual. As for a gang, room Terminating
// pods give back counts as coming: when a group domain fits with it, the group waits.
func (pl *Planner) groupLacksRoom(p *cycle, now time.Time) (*gang.Shortfall, *gang.RoomComing) {
	info := p.info
	if p.gate() != nil {
		return nil, nil
	}
	pts, ready := pl.groupReady(info)
	if !ready {
		return nil, nil
	}
	p.partners = pts
	gp, st := p.groupTodo()
	if st != nil || gp.anchor != "" || len(gp.todo) != len(pts) {
		return nil, nil // a partner is pinned or placed: the group's domain is decided
	}
	slots, ok := groupSlots(gp.todo)
	if !ok {
		return nil, nil // partners' devices that cannot be counted as one kind: the group waits
	}
	partners := make([]topology.Partner, len(gp.todo))
	need := 0
	for i, q := range gp.todo {
		partners[i] = topology.Partner{Gang: &q.gang, Key: i}
		need += q.need
	}
	gp.build(p, true, nil)
	for _, plan := range topology.PlanGroup(partners, gp.nodes) {
		if plan.Feasible {
			return nil, nil // room exists: reservations, not capacity, keep the group out
		}
	}
	if w := p.groupRoomComing(gp, partners, now); w != nil {
		return nil, w
	}
	gp.forPreemption = true
	gp.build(p, true, nil)
	sf := &gang.Shortfall{Info: info, Gang: topology.Gang{Need: need}, Placed: len(p.placed), Partners: partners, GroupNodes: gp.nodes}
	if slots != nil { // each member of a shape with claims takes a slot, as for a gang
		sf.Partners = make([]topology.Partner, len(gp.todo))
		for i, q := range gp.todo {
			g := q.gang
			if q.dev != nil {
				g = withSlots(g, q.dev.claims)
			}
			sf.Partners[i] = topology.Partner{Gang: &g, Key: i}
		}
		for i := range sf.GroupNodes {
			sf.GroupNodes[i].Free[gang.DeviceSlots] = slots.free(sf.GroupNodes[i].Name)
		}
		sf.SlotGain = slots.gain
	}
	return sf, nil
}

// groupReady returns the partners of the gang's placement group when every one is ready (its
// PodGroup exists and its members do), as the group gate requires before any partner plans.
func (pl *Planner) groupReady(info gang.Info) ([]Partner, bool) {
	pts, st := pl.Partners(info)
	if st != nil || len(pts) < info.Group.Size {
		return nil, false
	}
	for _, pt := range pts {
		if !pl.partnerReady(pt) {
			return nil, false
		}
	}
	return pts, true
}

// groupRoomComing plans the group again counting the room Terminating pods give back; when a
// group domain then fits every partner, the group waits for them instead of preempting.
func (p *cycle) groupRoomComing(gp *groupPlanning, partners []topology.Partner, now time.Time) *gang.RoomComing {
	back := gang.ReturningRoom(p.all, now)
	if len(back) == 0 {
		return nil
	}
	gp.build(p, true, back)
	domain, ok := topology.BestGroupFit(topology.PlanGroup(partners, gp.nodes))
	if !ok {
		return nil
	}
	return comingIn(back, domain, gp.nodes, func(n topology.GroupNode) (string, string) { return n.Name, n.Group })
}

// comingIn is the room coming back in domain: how many Terminating pods its nodes hold.
func comingIn[N any](back map[string]gang.Returning, domain string, nodes []N, where func(N) (name, domain string)) *gang.RoomComing {
	n := int64(0)
	for _, x := range nodes {
		if name, d := where(x); d == domain {
			n += back[name].Pods
		}
	}
	return &gang.RoomComing{Pods: n, Domain: domain}
}

// HoldRequest is the pin that holds the domain preemption freed for the gang: it reserves
// there the room the victims give back, so that nothing else takes it while they terminate.
// nodes are the shortfall's nodes, victims the pods evicted from the domain.
func (pl *Planner) HoldRequest(sf *gang.Shortfall, nodes []topology.Node, domain string, victims []*v1.Pod) placement.PinRequest {
	info := sf.Info
	freed, pods := gang.FreedBy(victims)
	var freedNodes []topology.Node
	for _, n := range nodes {
		if n.Domain != domain {
			continue
		}
		free := topology.Resources{}
		for r, q := range n.Free {
			free[r] = q + freed[n.Name][r]
		}
		n.Free, n.FreePods = free, n.FreePods+pods[n.Name]
		// preemptNodes' Fits ignore resources (evictions change them), and NodeRoom counts a
		// node a shape fits as room for at least one member: judge resources here, after the
		// evictions, so a node that stays full is no part of the reservation.
		fits := make([]bool, len(n.Fits))
		for s, f := range n.Fits {
			fits[s] = f && s < len(sf.Gang.Shapes) && n.FreePods >= 1 && topology.Within(sf.Gang.Shapes[s], free)
		}
		n.Fits = fits
		freedNodes = append(freedNodes, n)
	}
	g := sf.Gang
	g.Need = max(info.MinMember-sf.Placed, 1)
	counts, _ := topology.Assign(&g, freedNodes, g.Need)
	res := SlotsOf(&g, freedNodes, counts)
	snapshot := pl.SnapshotCapacity()
	capacity := func(name string) (topology.Resources, int64, bool) {
		free, n, ok := snapshot(name)
		if !ok {
			return nil, 0, false
		}
		for r, q := range freed[name] {
			free[r] += q
		}
		return free, n + pods[name], ok
	}
	return placement.PinRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Domain: domain,
		Reserved: res, Capacity: capacity, Remaining: max(info.MinMember-sf.Placed, 0), SoleFit: true, MinMember: info.MinMember}
}
