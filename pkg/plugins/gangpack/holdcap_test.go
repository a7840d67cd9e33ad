package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// maxHoldsPerNamespace: how many gangs of one namespace may hold domains at once.

func TestHoldCapPerNamespace(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1)}
	x0, x1 := gangMember("x-0", "x", 1), gangMember("x-1", "x", 1)
	y0, y1 := gangMember("y-0", "y", 1), gangMember("y-1", "y", 1)
	args := testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](1)
	w := newWorld(t, args, nodes, []*v1.Pod{x0, x1, y0, y1}, podGroup("x", 2), podGroup("y", 2))
	w.mustPin(x0) // x holds a domain while it forms
	_, st := w.preFilter(y0)
	if want := msg.HoldCap("ns", 1); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(y-0) = %v, want %q", st, want)
	}
	if len(w.pl.ledger.Stats().Blocked) != 1 {
		t.Fatal("the capped pod is not parked for the next hold lift")
	}
	w.mustPin(x1) // x's own members are not capped
}
