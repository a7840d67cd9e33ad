package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Filter at the plugin level: a pinned member's planned candidates, and the room forming
// gangs reserve.

// kube-scheduler tries a pod's nominated node with Filter alone, ignoring the PreFilter
// result: Filter refuses a pinned member any node outside the candidates PreFilter planned.
func TestFilterRefusesNodeOutsideCandidates(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 4), testNode("a1", "a", 1)}
	m := gangMember("g-0", "g", 2)
	w := newWorld(t, nil, nodes, []*v1.Pod{m, gangMember("g-1", "g", 2)}, podGroup("g", 2))
	c := w.mustPin(m)
	if c.res.NodeNames.Has("a1") || !c.res.NodeNames.Has("a0") {
		t.Fatalf("candidates %v, want a0 only", c.res.NodeNames.UnsortedList())
	}
	for node, want := range map[string]string{"a0": "", "a1": msg.NotCandidate} {
		ni, err := w.h.snapshot.NodeInfos().Get(node)
		if err != nil {
			t.Fatal(err)
		}
		if st := w.pl.Filter(w.ctx, c.cs, m, ni); st.Message() != want || (want != "" && st.Code() != fwk.UnschedulableAndUnresolvable) {
			t.Errorf("Filter on %s = %v, want %q", node, st, want)
		}
	}
}

// A committed gang's surplus member may not use a node another forming gang holds.
func TestSurplusMemberRespectsAnotherGangsHold(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("a3", "a", 1)}
	x0, x1 := gangMember("x-0", "x", 1), gangMember("x-1", "x", 1)
	y0, y1 := gangMember("y-0", "y", 1), gangMember("y-1", "y", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, y0, y1}, podGroup("x", 1), podGroup("y", 2))
	if st := w.mustPin(x0).reserveOn("a0"); !st.IsSuccess() {
		t.Fatalf("Permit(x-0) = %v, want admission (gang of one)", st)
	}
	w.resnap(assumed(x0, "a0"))
	w.mustPin(y0) // y holds domain a while it forms
	w.addPod(x1)
	c := w.mustPin(x1)
	ni, _ := w.h.snapshot.NodeInfos().Get("a1")
	if st := w.pl.Filter(w.ctx, c.cs, x1, ni); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != msg.NodeReserved {
		t.Fatalf("Filter(x-1 on a1) = %v, want %q", st, msg.NodeReserved)
	}
}

// A standalone pod may use a node of a domain where a gang forms, outside the gang's
// reserved room; on the reserved node it is refused and told which gang reserves it.
func TestStandaloneUsesRoomOutsideReservations(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8)}
	x0, x1 := gangMember("x-0", "x", 4), gangMember("x-1", "x", 4)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, x1, solo}, podGroup("x", 2))
	w.mustPin(x0)
	if c, _ := w.pl.ledger.Commitment("ns/x"); c.Reserved["a0"].Count != 2 || len(c.Reserved) != 1 {
		t.Fatalf("x reserves %+v, want both members packed on a0", c.Reserved)
	}
	cs := framework.NewCycleState()
	if _, st := w.pl.PreFilter(w.ctx, cs, solo, w.nodeInfos()); !st.IsSuccess() {
		t.Fatalf("PreFilter(solo) = %v", st)
	}
	statuses := framework.NewDefaultNodeToStatus()
	for _, tc := range []struct {
		node string
		code fwk.Code
	}{{"a0", fwk.UnschedulableAndUnresolvable}, {"a1", fwk.Success}} {
		ni, _ := w.h.snapshot.NodeInfos().Get(tc.node)
		st := w.pl.Filter(w.ctx, cs, solo, ni)
		if st.Code() != tc.code || (tc.code != fwk.Success && st.Message() != msg.NodeReserved) {
			t.Fatalf("Filter(solo on %s) = %v, want %v", tc.node, st, tc.code)
		}
		if !st.IsSuccess() {
			statuses.Set(tc.node, st)
		}
	}
	_, pst := w.pl.PostFilter(w.ctx, cs, solo, statuses)
	if want := "Room is reserved for forming gangs: ns/x reserves 2 members on 1 node of a."; pst.Message() != want {
		t.Fatalf("PostFilter(solo) = %q, want %q", pst.Message(), want)
	}
}
