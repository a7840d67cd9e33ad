package preempt

import (
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
// The wait is bounded: a pod still Terminating gang.TerminatingSlack past its deletionTimestamp
// (the moment the API server gave it to be gone, its grace period included) is taken to be
// stuck, for example on an unreachable node, and its room no longer counts as coming.

// standaloneRoomComing is roomComing for a standalone pod: when no node takes it now but one
// would once its Terminating pods are gone, the pod waits for them.
func (e *Evaluator) standaloneRoomComing(pr *preemptor) *waitResult {
	back := gang.ReturningRoom(pr.all, e.now())
	if len(back) == 0 {
		return nil
	}
	req := pr.gang.Shapes[0]
	best, found := "", false
	for _, n := range pr.nodes {
		if !n.Fits[0] {
			continue
		}
		if n.FreePods >= 1 && topology.Within(req, n.Free) {
			return nil // room exists now: something else keeps the pod out
		}
		b, ok := back[n.Name]
		if !ok || n.FreePods+b.Pods < 1 || !topology.Within(req, addResources(n.Free, b.Free)) {
			continue
		}
		if !found || n.Name < best {
			best, found = n.Name, true
		}
	}
	if !found {
		return nil
	}
	return roomComingWait(back[best].Pods, best)
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
