package gangpack

import (
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// groupLacksRoom is gangLacksRoom for a partner of a placement group: the whole group is the
// preemptor, and a candidate is one group domain where every partner fits whole once the
// victims are gone. It applies while the group has no domain yet (no partner pinned or
// placed), every partner is ready, and no group domain fits the group even when other gangs'
// reservations are ignored. A group does not hold the freed domain: its partners wait on the
// victims (one record for the group) and then plan as usual.
func (pl *GangPack) groupLacksRoom(logger klog.Logger, pr *preemptor, info gangInfo) bool {
	p := &planner{pl: pl, logger: logger, pod: pr.pod, info: info, all: pr.all, generation: pl.store.Generation()}
	p.findPlaced()
	if len(p.placed) > 0 || p.gate() != nil {
		return false
	}
	pts, st := pl.partners(info)
	if st != nil || len(pts) < info.Group.Size {
		return false
	}
	for _, pt := range pts {
		if !pl.partnerReady(pt) {
			return false
		}
	}
	p.partners = pts
	gp, st := p.groupTodo()
	if st != nil || gp.anchor != "" || len(gp.todo) != len(pts) {
		return false // a partner is pinned or placed: the group's domain is decided
	}
	partners := make([]topology.Partner, len(gp.todo))
	need := 0
	for i, q := range gp.todo {
		partners[i] = topology.Partner{Gang: &q.gang, Key: i}
		need += q.need
	}
	gp.build(p, true)
	for _, plan := range topology.PlanGroup(partners, gp.nodes) {
		if plan.Feasible {
			return false // room exists: reservations, not capacity, keep the group out
		}
	}
	gp.forPreemption = true
	gp.build(p, true)
	pr.partners, pr.groupNodes = partners, gp.nodes
	pr.planner, pr.gang = p, topology.Gang{Need: need}
	return true
}
