package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// groupPlanning is one planning of a placement group: the partners still to place (each a
// planner of its own, the current gang's first) and the group nodes they were planned over.
type groupPlanning struct {
	// forPreemption makes build judge only what evicting pods cannot change: shape fits
	// ignore resources and devices (the preemption arithmetic recomputes them from the freed
	// room; devices as device slots, groupSlots).
	forPreemption bool
	todo          []*cycle
	anchor        string // the group domain pinned or placed partners fix; "" = any
	nodes         []topology.GroupNode
	byName        map[string]int // node name → index in nodes
}

// placeGroup plans and pins the current gang's whole placement group (rules 2 and 3): every
// partner without a pin or placed members gets its own commitment, with its own reservation,
// in one group domain chosen by best fit over the group's total, all at once. Partners that
// are pinned or have placed members anchor the group domain (docs/design.md §19, item 5). It returns the current
// gang's new commitment, or the status that parks the pod.
func (p *cycle) placeGroup() (*placement.Commitment, *fwk.Status) {
	g := p.info.Group
	p.groupPlanned = true
	gp, st := p.groupTodo()
	if st != nil {
		return nil, st
	}
	gp.build(p, false, nil)
	for _, q := range gp.todo {
		if st := q.deviceStatus(); st != nil {
			return nil, st
		}
	}
	partners := make([]topology.Partner, len(gp.todo))
	for i, q := range gp.todo {
		partners[i] = topology.Partner{Gang: &q.gang, Key: i}
	}
	plans := topology.PlanGroup(partners, gp.nodes)
	prefs := p.groupPreferences(gp, plans)
	best, ok := topology.BestGroupFitPreferred(plans, preferOf(prefs))
	if !ok {
		return nil, p.noGroupFit(gp, partners, plans)
	}
	result := metrics.PinPinned
	if d, _ := topology.BestGroupFit(plans); prefs != nil && d != best {
		result = metrics.PinPreferred
	}
	plan := plans[best]
	within := placement.DomainRef{Key: g.TopologyKey, Value: best}
	sole := 0
	for _, gpl := range plans {
		if gpl.Feasible {
			sole++
		}
	}
	reqs := make([]placement.PinRequest, len(gp.todo))
	for i, q := range gp.todo {
		reqs[i] = placement.PinRequest{Gang: q.info.Key, Owner: q.info.UID, Key: q.info.TopologyKey, Domain: plan.Sub[i],
			Reserved: gp.reservation(q, i, plan.Members(i)), Capacity: p.capacity(), Remaining: q.need,
			SoleFit: sole < 2, MinMember: q.info.MinMember, Within: within}
	}
	infos := make([]gang.Info, len(gp.todo))
	for i, q := range gp.todo {
		infos[i] = q.info
	}
	cs, outcome := p.fx.PinGroup(g.Key, reqs, infos)
	if outcome != placement.Pinned {
		p.waitForRoom()
		metrics.CountPin(metrics.PinReserved)
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupNoRoomReserved(g.Key))
	}
	metrics.GroupTotal.WithLabelValues(metrics.GroupPlaced).Inc()
	var own *placement.Commitment
	for i, c := range cs {
		metrics.CountPin(result)
		if c.Gang == p.info.Key {
			own = &cs[i]
		}
	}
	p.logger.V(4).Info("gangpack.group.pinned", "pod", klog.KObj(p.pod), "group", g.Key, "groupKey", g.TopologyKey,
		"domain", best, "partners", len(cs), "need", plan.Need, "room", plan.Room, "preference", prefs[best])
	if !p.groupWoken { // partners parked by an earlier no-fit plan now have their pins
		p.fx.ActivateGroup(p.logger, gangsOf(p.partners), p.pod.Name)
	}
	p.others = p.pl.withProtected(p.info.Key, p.pl.read.ReservedExcept(p.info.Key), func() int32 { return p.pl.gangPreemptPriority(p.pod) }, p.now)
	return own, nil
}

// groupTodo lists the partners to place now (the current gang first, then by key) and the
// group domain the other partners anchor (groupAnchors).
func (p *cycle) groupTodo() (*groupPlanning, *fwk.Status) {
	gp := &groupPlanning{}
	self := p.partnerPlanner(p.info, p.templates)
	gp.todo = append(gp.todo, self)
	anchors := map[string]string{} // group-key value → the first partner fixing it
	for _, pt := range p.partners {
		if pt.Info.Key == p.info.Key {
			continue
		}
		values, anchored, st := p.partnerAnchor(pt.Info)
		if st != nil {
			return nil, st
		}
		if anchored {
			if len(values) > 1 {
				return nil, p.anchorWait("straddles", msg.GroupStraddles(p.info.Group.Key, pt.Info.Key, p.info.Group.TopologyKey, values))
			}
			if _, seen := anchors[values[0]]; !seen {
				anchors[values[0]] = pt.Info.Key
			}
			continue
		}
		templates, err := p.pl.partnerTemplates(pt.Info)
		if err != nil {
			return nil, fwk.AsStatus(err)
		}
		if len(templates) < pt.Info.MinMember {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupWait(p.info.Group.Key, p.info.Group.Size-1, p.info.Group.Size))
		}
		gp.todo = append(gp.todo, p.partnerPlanner(pt.Info, templates))
	}
	if len(anchors) > 1 {
		values := sets.List(sets.KeySet(anchors))
		return nil, p.anchorWait("split", msg.GroupSplit(p.info.Group.Key, p.info.Group.TopologyKey, values))
	}
	for v := range anchors {
		gp.anchor = v
	}
	return gp, nil
}

// partnerTemplates returns a partner's live members without a node, by name.
func (pl *Planner) partnerTemplates(info gang.Info) ([]*v1.Pod, error) {
	pods, err := pl.members.LiveUnbound(info.Namespace, info.Name, "")
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// partnerPlanner is a planner for one partner with nothing placed, sharing this planning's
// nodes and the other gangs' reservations.
func (p *cycle) partnerPlanner(info gang.Info, templates []*v1.Pod) *cycle {
	q := p.pl.newCycle(p.logger, templates[0], info, p.all, gang.Reading{Generation: p.generation, Others: p.others}, p.fx)
	q.templates, q.need = templates, max(info.MinMember, 1)
	q.buildGang()
	return q
}

// build translates the snapshot's nodes with a group-key value (only the anchor's when set)
// for the group planner: free room outside other gangs' reservations (unless raw), each
// partner's key value and shape fits.
func (gp *groupPlanning) build(p *cycle, raw bool, back map[string]gang.Returning) {
	var resources []string
	seen := map[string]bool{}
	for _, q := range gp.todo {
		for _, r := range q.resources {
			if !seen[r] {
				seen[r] = true
				resources = append(resources, r)
			}
		}
	}
	gk := p.info.Group.TopologyKey
	gp.nodes, gp.byName = nil, map[string]int{}
	for _, ni := range p.all {
		node := ni.Node()
		if node == nil {
			continue
		}
		v := node.Labels[gk]
		if v == "" || (gp.anchor != "" && v != gp.anchor) {
			continue
		}
		free, freePods := gang.NodeFree(ni, resources)
		freePods = p.setAsideReserved(node.Name, free, freePods, raw, back)
		n := topology.GroupNode{Name: node.Name, Group: v, Free: free, FreePods: freePods,
			Sub: make([]string, len(gp.todo)), Fits: make([][]bool, len(gp.todo)), Limits: make([]int, len(gp.todo))}
		for i, q := range gp.todo {
			n.Sub[i] = node.Labels[q.info.TopologyKey]
			n.Fits[i] = make([]bool, len(q.shapeFits))
			for s, f := range q.shapeFits {
				if gp.forPreemption {
					n.Fits[i][s] = f.Fits(ni, f.Request, 1)
				} else {
					n.Fits[i][s] = f.Fits(ni, free, freePods)
				}
			}
			if gp.forPreemption {
				continue // devices are device slots there (groupSlots)
			}
			if limit, limited := q.deviceRoom(ni, n.Fits[i], raw); limited {
				n.Limits[i] = limit
			}
		}
		gp.byName[node.Name] = len(gp.nodes)
		gp.nodes = append(gp.nodes, n)
	}
}

// reservation is partner i's reservation: its members of the plan's witness, each node's
// slot the size of the largest of its shapes that fit there.
func (gp *groupPlanning) reservation(q *cycle, i int, members map[string]int) placement.Reservation {
	var nodes []topology.Node
	for name := range members {
		if j, ok := gp.byName[name]; ok {
			n := gp.nodes[j]
			nodes = append(nodes, topology.Node{Name: name, Free: n.Free, FreePods: n.FreePods, Fits: n.Fits[i]})
		}
	}
	return SlotsOf(&q.gang, nodes, members)
}

// noGroupFit parks the pod when no group domain holds every partner: with the reserved
// suffix when one would if no other gang reserved room, naming a domain where the planner's
// search stopped at its bound (a fit may exist there), else naming the domain that holds the
// most of the group's members.
func (p *cycle) noGroupFit(gp *groupPlanning, partners []topology.Partner, plans map[string]*topology.GroupPlan) *fwk.Status {
	g := p.info.Group
	p.recordPending()
	if len(p.others) > 0 {
		gp.build(p, true, nil)
		if _, ok := topology.BestGroupFit(topology.PlanGroup(partners, gp.nodes)); ok {
			p.waitForRoom()
			metrics.CountPin(metrics.PinReserved)
			p.logger.V(4).Info("gangpack.group.no_fit", "pod", klog.KObj(p.pod), "group", g.Key, "reason", "reserved")
			return fwk.NewStatus(fwk.Unschedulable, msg.GroupNoRoomReserved(g.Key))
		}
	}
	metrics.CountPin(metrics.PinNoFit)
	metrics.GroupTotal.WithLabelValues(metrics.GroupNoFit).Inc()
	if d, ok := truncatedGroup(plans); ok {
		p.logger.V(4).Info("gangpack.group.no_fit", "pod", klog.KObj(p.pod), "group", g.Key, "reason", "search_limit",
			"anchor", gp.anchor, "bestDomain", d)
		return fwk.NewStatus(fwk.Unschedulable, msg.GroupNoRoomTruncated(g.Key, d))
	}
	d, holds, need, ok := topology.LargestGroup(plans)
	p.logger.V(4).Info("gangpack.group.no_fit", "pod", klog.KObj(p.pod), "group", g.Key, "reason", "capacity",
		"anchor", gp.anchor, "bestDomain", d, "holds", holds, "need", need)
	if !ok {
		return fwk.NewStatus(fwk.Unschedulable, msg.GroupNoRoomNoLabel(g.Key, g.TopologyKey))
	}
	return fwk.NewStatus(fwk.Unschedulable, msg.GroupNoRoomBest(g.Key, d, holds, need))
}

// truncatedGroup returns the byte-wise smallest group domain whose search stopped at its
// bound.
func truncatedGroup(plans map[string]*topology.GroupPlan) (string, bool) {
	best, ok := "", false
	for d, p := range plans {
		if p != nil && p.Truncated && (!ok || d < best) {
			best, ok = d, true
		}
	}
	return best, ok
}
