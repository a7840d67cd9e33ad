package gangpack

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Permit's all-or-nothing gate at the plugin level: waiters of dead and live attempts, a
// rejected waiter that is still assumed, and the guard near a waiter's deadline.

// An unwind between Permit returning Wait and the framework registering the waiter cannot
// see the waiter; the late waiter of the dead attempt must still be rejected at once, not
// wait out its timeout while its siblings re-plan without it.
func TestLateWaiterOfDeadAttemptIsRejected(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	// A sibling's Unreserve unwinds the attempt before the framework registered g-0.
	pin := plan.ReadPin(c.cs)
	if res := w.pl.ledger.Unwind(klog.Background(), "ns/g", pin.ID, gang.CauseUnreserve, false); !res.Released || res.Rejected != 0 {
		t.Fatalf("unwind = %+v, want a release that found no registered waiter", res)
	}
	waiter := w.h.register(m0)
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("late waiter verdict %q, want rejection %q", got, msg.Unwound("ns/g"))
	}
}

// A live waiter of a live attempt is left alone by the supervision.
func TestWaiterOfLiveAttemptKeepsWaiting(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	waiter := w.h.register(m0)
	if got := waiter.await(200 * time.Millisecond); got != "" {
		t.Fatalf("waiter of a live attempt got verdict %q", got)
	}
	w.resnap(assumed(m0, "a0"))
	c1 := w.mustPin(m1)
	if st := c1.reserveOn("a1"); !st.IsSuccess() {
		t.Fatalf("Permit(g-1) = %v, want the admission", st)
	}
	if got := waiter.await(testWait); got != "allowed" {
		t.Fatalf("g-0 verdict %q, want allowed", got)
	}
}

// A member rejected at Permit stays assumed on its node until the framework unreserves it.
// A sibling planning in that window must not count it as placed: it would adopt the domain
// for the rest of the gang and bind without it.
func TestRejectedWaiterIsNotPlaced(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	waiter := w.h.register(m0)
	w.pl.ledger.Unwind(klog.Background(), "ns/g", plan.ReadPin(c.cs).ID, gang.CauseExpired, false)
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("g-0 verdict %q, want rejection", got)
	}
	w.resnap(assumed(m0, "a0")) // not unreserved yet
	c1 := w.mustPin(m1)
	if st := c1.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-1) = %v, want Wait for g-0 (not an admission next to a rejected member)", st)
	}
}

// The completing member does not admit the gang when a waiter's Permit wait ends within
// ledger.PermitDeadlineMargin (kube-scheduler's timer could reject that waiter while the others
// bind): it is refused, and its Unreserve unwinds the whole attempt.
func TestPermitGuardNearWaiterDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		admit   bool
	}{
		{"well before the waiter's deadline", 10 * time.Second, true},
		{"within the margin", 600*time.Second - ledger.PermitDeadlineMargin/2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
			m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
			w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
			w.after = func(time.Duration, func()) func() { return func() {} }
			// The waiter's supervisor runs once the waiter is registered, as it does when the
			// framework registers it right after Permit: a supervisor delayed past the
			// completing member's Reserve would see the gang committed and admit the waiter.
			var supervise []func()
			w.spawn = func(f func()) { supervise = append(supervise, f) }
			start := time.Now()
			w.now = func() time.Time { return start }
			if st := w.mustPin(m0).reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(g-0) = %v, want Wait", st)
			}
			waiter := w.h.register(m0)
			for _, f := range supervise {
				f()
			}
			w.resnap(assumed(m0, "a0"))
			w.now = func() time.Time { return start.Add(tc.elapsed) }
			c := w.mustPin(m1)
			st := c.reserveOn("a1")
			if tc.admit {
				if !st.IsSuccess() || waiter.now() != "allowed" {
					t.Fatalf("Permit(g-1) = %v, waiter %q; want both admitted", st, waiter.now())
				}
				return
			}
			if st.Message() != msg.WaitEndsSoon("ns/g") || waiter.now() != msg.Unwound("ns/g") {
				t.Fatalf("Permit(g-1) = %v, waiter %q; want %q and the waiter rejected with %q", st, waiter.now(), msg.WaitEndsSoon("ns/g"), msg.Unwound("ns/g"))
			}
			w.pl.Unreserve(w.ctx, c.cs, m1, "a1") // idempotent: the attempt is already unwound
			if _, pinned := w.pl.ledger.Commitment("ns/g"); pinned {
				t.Fatal("gang ns/g still pinned after the guarded Permit and its Unreserve")
			}
		})
	}
}
