package gangpack

import (
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// groupLacksRoom is gangLacksRoom for a partner of a placement group: the whole group is the
// preemptor, and a candidate is one group domain where every partner fits whole once the
// victims are gone. It applies while the group has no domain yet (no partner pinned or
// placed), every partner is ready, and no group domain fits the group even when other gangs'
// reservations are ignored. A group does not hold the freed domain: its partners wait on the
// victims (one record for the group) and then plan as usual. As for a gang, room Terminating
// pods give back counts as coming: when a group domain fits with it, the group waits.
func (pl *GangPack) groupLacksRoom(logger klog.Logger, pr *preemptor, info gang.Info) (bool, *waitResult) {
	p := &planner{pl: pl, logger: logger, pod: pr.pod, info: info, all: pr.all, generation: pl.ledger.Generation()}
	p.findPlaced()
	if len(p.placed) > 0 || p.gate() != nil {
		return false, nil
	}
	pts, st := pl.partners(info)
	if st != nil || len(pts) < info.Group.Size {
		return false, nil
	}
	for _, pt := range pts {
		if !pl.partnerReady(pt) {
			return false, nil
		}
	}
	p.partners = pts
	gp, st := p.groupTodo()
	if st != nil || gp.anchor != "" || len(gp.todo) != len(pts) {
		return false, nil // a partner is pinned or placed: the group's domain is decided
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
			return false, nil // room exists: reservations, not capacity, keep the group out
		}
	}
	if w := pl.groupRoomComing(p, gp, partners); w != nil {
		return false, w
	}
	gp.forPreemption = true
	gp.build(p, true)
	pr.partners, pr.groupNodes = partners, gp.nodes
	pr.planner, pr.gang = p, topology.Gang{Need: need}
	return true, nil
}

// groupRoomComing plans the group again counting the room Terminating pods give back; when a
// group domain then fits every partner, the group waits for them instead of preempting.
func (pl *GangPack) groupRoomComing(p *planner, gp *groupPlanning, partners []topology.Partner) *waitResult {
	back := returningRoom(p.all, pl.ledger.Now())
	if len(back) == 0 {
		return nil
	}
	p.returning = back
	gp.build(p, true)
	p.returning = nil
	domain, ok := topology.BestGroupFit(topology.PlanGroup(partners, gp.nodes))
	if !ok {
		return nil
	}
	n := int64(0)
	for _, gn := range gp.nodes {
		if gn.Group == domain {
			n += back[gn.Name].pods
		}
	}
	return roomComingWait(n, domain)
}
