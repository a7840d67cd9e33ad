package gangpack

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// TestUnwindRejectsWaitersOutsideTheStoreLock: an unwind walks every framework waiting pod to
// reject its attempt's waiters; Filter reads reservations on every node in parallel and must
// not wait for that walk.
func TestUnwindRejectsWaitersOutsideTheStoreLock(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("b1", "b", 1), testNode("b2", "b", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	h0, h1 := gangMember("h-0", "h", 1), gangMember("h-1", "h", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, h0, h1}, podGroup("g", 2), podGroup("h", 2))
	if st := w.mustPin(m0).reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.mustPin(h0) // another forming gang: Filter's reservation reads take the store's lock
	waiter := w.h.register(m0)
	blocked := false
	w.h.onIterate = func() {
		done := make(chan struct{})
		go func() {
			w.pl.ledger.ReservedOn("a2", "")
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			blocked = true
		}
	}
	res := w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
	if blocked {
		t.Fatal("Filter's ReservedOn waited while the unwind walked the waiting pods")
	}
	if !res.Released || res.Rejected != 1 || waiter.now() != msg.Unwound("ns/g") {
		t.Fatalf("unwind = %+v, waiter %q; want released with its waiter rejected (%q)", res, waiter.now(), msg.Unwound("ns/g"))
	}
}
