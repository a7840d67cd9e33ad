package gangpack

import (
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Room coming back. A Terminating pod still holds its node's resources (the snapshot counts
// it) but gives them back within its grace period. Preemption counts that room as coming: a
// gang or pod that would fit once the Terminating pods are gone waits for them and evicts
// nobody. This covers a gang restarting in place (its own old members terminate) and a
// preemptor whose earlier victims still terminate, also after a leader change, when no
// in-memory record of them exists: the victims themselves carry the evidence.
//
// The wait is bounded: a pod still Terminating terminatingSlack past its deletionTimestamp
// (the moment the API server gave it to be gone, its grace period included) is taken to be
// stuck, for example on an unreachable node, and its room no longer counts as coming.

// terminatingSlack is how long past its deletionTimestamp a Terminating pod's room still
// counts as coming back (the kubelet's kill and the API's final delete usually take seconds).
const terminatingSlack = 2 * time.Minute

// comingBack reports whether the pod is Terminating and its room still counts as coming back.
func comingBack(p *v1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Before(p.DeletionTimestamp.Add(terminatingSlack))
}

// stuck reports whether the pod is Terminating past the bound: its room is not waited for.
func stuck(p *v1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && !comingBack(p, now)
}

// returning is the room the Terminating pods on one node give back.
type returning struct {
	free topology.Resources
	pods int64 // how many Terminating pods, and so how many pod slots
}

// returningRoom returns, per node of set, the room its Terminating pods give back (stuck ones
// left out); nil when there is none.
func returningRoom(set []fwk.NodeInfo, now time.Time) map[string]returning {
	var out map[string]returning
	for _, ni := range set {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q == nil || !comingBack(q, now) {
				continue
			}
			if out == nil {
				out = map[string]returning{}
			}
			r := out[node.Name]
			if r.free == nil {
				r.free = topology.Resources{}
			}
			for k, v := range gang.Request(q) {
				r.free[k] += v
			}
			r.pods++
			out[node.Name] = r
		}
	}
	return out
}

// addReturning adds what Terminating pods give back on the node to its free room, when the
// planner counts it (preemption's "is room coming" judgement only).
func (p *planner) addReturning(name string, free topology.Resources, freePods int64) int64 {
	back, ok := p.returning[name]
	if !ok {
		return freePods
	}
	for res := range free {
		free[res] += back.free[res]
	}
	return freePods + back.pods
}

// roomComing plans the gang over set again, counting the room Terminating pods give back.
// When a domain then fits the whole gang, the gang waits for them instead of preempting.
func (pl *GangPack) roomComing(p *planner, set []fwk.NodeInfo) *waitResult {
	back := returningRoom(set, pl.ledger.Now())
	if len(back) == 0 {
		return nil
	}
	p.returning = back
	defer func() { p.returning = nil }()
	domain, fits := topology.BestFit(topology.Rooms(p.planOver(set)), p.need)
	if !fits {
		return nil
	}
	n := int64(0)
	for _, tn := range p.tnodes {
		if tn.Domain == domain {
			n += back[tn.Name].pods
		}
	}
	return roomComingWait(n, domain)
}

// standaloneRoomComing is roomComing for a standalone pod: when no node takes it now but one
// would once its Terminating pods are gone, the pod waits for them.
func (pl *GangPack) standaloneRoomComing(pr *preemptor) *waitResult {
	back := returningRoom(pr.all, pl.ledger.Now())
	if len(back) == 0 {
		return nil
	}
	req := pr.gang.Shapes[0]
	best, found := "", false
	for _, n := range pr.nodes {
		if !n.Fits[0] {
			continue
		}
		if n.FreePods >= 1 && within(req, n.Free) {
			return nil // room exists now: something else keeps the pod out
		}
		b, ok := back[n.Name]
		if !ok || n.FreePods+b.pods < 1 || !within(req, addResources(n.Free, b.free)) {
			continue
		}
		if !found || n.Name < best {
			best, found = n.Name, true
		}
	}
	if !found {
		return nil
	}
	return roomComingWait(back[best].pods, best)
}

func roomComingWait(n int64, domain string) *waitResult {
	return &waitResult{status: fwk.NewStatus(fwk.Unschedulable, msg.PreemptRoomComing(int(n), domain))}
}

// addResources returns a + b.
func addResources(a, b topology.Resources) topology.Resources {
	out := make(topology.Resources, len(a))
	for r, q := range a {
		out[r] = q + b[r]
	}
	return out
}
