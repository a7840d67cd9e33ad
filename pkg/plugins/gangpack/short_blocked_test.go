package gangpack

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// A member of a pinned gang whose placed members' domain lacks room for it only because
// another forming gang reserves that room parks as reservation-blocked, and the other gang's
// hold lift wakes it; without a reservation in the way it is not parked so.
func TestPinnedShortBehindReservationWaitsForHoldLift(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	g0, g1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	h0 := gangMember("h-0", "h", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{g0, g1, h0}, podGroup("g", 1), podGroup("h", 1))
	if st := w.mustPin(g0).reserveOn("a1"); !st.IsSuccess() {
		t.Fatalf("Permit(g-0) = %v, want admitted (minMember 1)", st)
	}
	w.updatePod(placedOn(g0.DeepCopy(), "a1"))
	w.resnap()
	w.mustPin(h0) // h forms in domain a and reserves a2
	if _, st := w.preFilter(g1); st.IsSuccess() || !strings.Contains(st.Message(), "cannot fit all remaining gang members") {
		t.Fatalf("PreFilter(g-1) = %v, want the pinned domain short", st)
	}
	if _, blocked := w.pl.ledger.Stats().Blocked[testNS+"/g-1"]; !blocked {
		t.Fatalf("g-1 not parked as reservation-blocked: %v", w.pl.ledger.Stats().Blocked)
	}
	w.h.mu.Lock()
	w.h.activated = nil
	w.h.mu.Unlock()
	w.pl.ledger.Unwind(klog.FromContext(w.ctx), testNS+"/h", placement.AnyID, gang.CauseUnreserve, false)
	w.h.mu.Lock()
	activated := slices.Clone(w.h.activated)
	w.h.mu.Unlock()
	if !slices.Contains(activated, testNS+"/g-1") {
		t.Fatalf("h's hold lift activated %v, want %s/g-1", activated, testNS)
	}

	// Room short with no reservation in the way: a2 taken by a bound pod.
	w.addPod(placedOn(standalone("fill"), "a2"))
	w.resnap()
	if n := len(w.pl.ledger.Stats().Blocked); n != 0 { // h's hold lift woke them all
		t.Fatalf("%d pods still reservation-blocked after the hold lift, want 0", n)
	}
	if _, st := w.preFilter(g1); st.IsSuccess() {
		t.Fatal("PreFilter(g-1) succeeded on a full domain")
	}
	if _, blocked := w.pl.ledger.Stats().Blocked[testNS+"/g-1"]; blocked {
		t.Fatal("g-1 parked as reservation-blocked though no reservation holds its room")
	}
}
