package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// A standalone pod as preemptor: it evicts whole gangs, only for lack of room, and the node
// its victims free is kept for it.

// filteredOut is the node statuses of a standalone pod that Filter rejected on every node
// for resources (Unschedulable, which preemption may resolve).
func filteredOut() fwk.NodeToStatusReader {
	return framework.NewNodeToStatus(map[string]*fwk.Status{}, fwk.NewStatus(fwk.Unschedulable, "Insufficient nvidia.com/gpu"))
}

// A high-priority standalone pod in a full cluster of gangs evicts a whole gang, never one
// member (E5), and names itself and the node in the events.
func TestPreemptStandaloneEvictsWholeGang(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	pods := gangOn("low", 1, "a1", "a2")
	solo := prio(standalone("solo"), 10)
	w := newPreemptWorld(t, nodes, append(pods, solo), podGroup("low", 2))
	before := counter(t, metrics.PreemptorPod, metrics.PreemptResultPreempted)
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if !st.IsSuccess() || res == nil || res.NominatingInfo == nil {
		t.Fatalf("PostFilter = %v, %v", res, st)
	}
	node := res.NominatingInfo.NominatedNodeName
	if got := w.remaining(); !slices.Equal(got, []string{"solo"}) {
		t.Fatalf("pods left %v, want the whole gang evicted", got)
	}
	want := "Preempted by pod " + testNS + "/solo to place it in domain " + node
	if notes := w.eventNotes(); notes[testNS+"/low-0"] != want || notes[testNS+"/low-1"] != want {
		t.Fatalf("events %v, want %q", notes, want)
	}
	if d := counter(t, metrics.PreemptorPod, metrics.PreemptResultPreempted) - before; d != 1 {
		t.Fatalf("preemption_total{pod,preempted} grew by %v", d)
	}
}

// A standalone pod that some node could take by its resources did not fail for lack of
// room: nothing is evicted and nothing is explained.
func TestPreemptStandaloneNotForRoom(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	pods := []*v1.Pod{placedOn(prio(standalone("low"), 1), "a1")}
	solo := prio(standalone("solo"), 10)
	w := newPreemptWorld(t, nodes, append(pods, solo), nil...)
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if st.Code() != fwk.Unschedulable || st.Message() != "" || !clears(res) {
		t.Fatalf("PostFilter = %v, %v; want a plain Unschedulable", res, st)
	}
	if len(w.remaining()) != 2 {
		t.Fatal("evicted")
	}
}

// gone removes the pods from the world: the informer, the snapshot's pod list (after resnap).
func (w *world) gone(pods ...*v1.Pod) {
	w.t.Helper()
	for _, p := range pods {
		w.pods = slices.DeleteFunc(w.pods, func(q *v1.Pod) bool { return q.UID == p.UID })
		_ = w.podInf.GetIndexer().Delete(p)
	}
	w.resnap()
}

// A standalone preemptor's node, freed by its victims, is not taken by a lower-priority gang
// while the preemptor is pending: the gang's planning leaves the node's room to it, the
// preemptor passes Filter there, and no second pod is evicted.
func TestPreemptStandaloneNodeKeptFromLowerGang(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	v := placedOn(prio(standalone("v"), 1), "a1")
	other := placedOn(prio(standalone("other"), 1), "a2")
	solo := prio(standalone("solo"), 10)
	g := prio(gangMember("g-0", "g", 1), 1)
	w := newPreemptWorld(t, nodes, []*v1.Pod{v, other, solo, g}, podGroup("g", 1))
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if !st.IsSuccess() || res == nil || res.NominatingInfo.NominatedNodeName != "a1" {
		t.Fatalf("PostFilter(solo) = %+v, %v; want a1 nominated", res, st)
	}
	w.awaitRemaining("g-0", "other", "solo")
	w.gone(v) // the victim is gone; solo waits in backoff, the lower-priority gang plans first
	if c, st := w.preFilter(g); st.IsSuccess() && slices.Contains(candidateNames(c.res), "a1") {
		t.Fatalf("lower-priority gang g planned onto a1, the preemptor's node: %v", candidateNames(c.res))
	}
	cs := framework.NewCycleState()
	if _, st := w.pl.PreFilter(w.ctx, cs, solo, w.nodeInfos()); !st.IsSuccess() && st.Code() != fwk.Skip {
		t.Fatalf("PreFilter(solo) = %v", st)
	}
	a1, _ := w.h.snapshot.NodeInfos().Get("a1")
	if st := w.pl.Filter(w.ctx, cs, solo, a1); !st.IsSuccess() {
		t.Fatalf("Filter(solo on a1) = %v, want the preemptor's node free for it", st)
	}
}
