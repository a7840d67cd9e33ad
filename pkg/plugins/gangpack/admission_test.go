package gangpack

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

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
			w.pl.ledger.SetAfter(func(time.Duration, func()) func() { return func() {} })
			// The waiter's supervisor runs once the waiter is registered, as it does when the
			// framework registers it right after Permit: a supervisor delayed past the
			// completing member's Reserve would see the gang committed and admit the waiter.
			var supervise []func()
			w.pl.ledger.SetSpawn(func(f func()) { supervise = append(supervise, f) })
			start := time.Now()
			w.pl.ledger.SetNow(func() time.Time { return start })
			if st := w.mustPin(m0).reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(g-0) = %v, want Wait", st)
			}
			waiter := w.h.register(m0)
			for _, f := range supervise {
				f()
			}
			w.resnap(assumed(m0, "a0"))
			w.pl.ledger.SetNow(func() time.Time { return start.Add(tc.elapsed) })
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
