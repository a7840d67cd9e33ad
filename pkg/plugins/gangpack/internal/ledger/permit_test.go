package ledger

import (
	"testing"

	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// An attempt's members wait at Permit until the gang commits; the member that completes it
// is admitted and allows every waiter of the attempt.
func TestPermitWaitsThenAdmitsTheAttempt(t *testing.T) {
	m0, m1 := member("g-0", "g"), member("g-1", "g")
	b := newBench(t, m0, m1)
	g := info("g", 2)
	c := b.pin(g, "d", "", "n0", "n1")
	if b.reserve(m0, g, c.ID, "n0") {
		t.Fatal("the gang committed with one member of two")
	}
	v, w0 := b.permit(m0, g, c.ID)
	if v.Outcome != Wait {
		t.Fatalf("Permit(g-0) = %+v, want Wait", v)
	}
	if len(b.spawned) != 1 {
		t.Fatalf("%d supervisors started, want the waiter's", len(b.spawned))
	}
	if !b.activated("ns/g-1") {
		t.Fatalf("activated %v, want the gang woken by its first Permit", b.h.activated)
	}
	if !b.reserve(m1, g, c.ID, "n1") {
		t.Fatal("the gang did not commit with both members")
	}
	if v, _ := b.permit(m1, g, c.ID); v.Outcome != Admit {
		t.Fatalf("Permit(g-1) = %+v, want Admit", v)
	}
	if got := w0.got(); got != "allowed" {
		t.Fatalf("waiter g-0 = %q, want allowed", got)
	}
	if b.l.Stats().Deadlines != 0 {
		t.Fatal("the committed attempt kept its deadline")
	}
}

// A member of an attempt that was unwound is rejected at Permit and its record forgotten.
func TestPermitRejectsUnwoundAttempt(t *testing.T) {
	m0 := member("g-0", "g")
	b := newBench(t, m0)
	g := info("g", 2)
	c := b.pin(g, "d", "", "n0", "n1")
	b.reserve(m0, g, c.ID, "n0")
	res := b.l.Unwind(klog.Background(), g.Key, c.ID, gang.CauseUnreserve, false)
	if !res.Released || res.Rejected != 0 {
		t.Fatalf("Unwind = %+v, want released with no waiter", res)
	}
	if v, _ := b.permit(m0, g, c.ID); v.Outcome != Reject || v.Msg != msg.Unwound(g.Key) {
		t.Fatalf("Permit(g-0) = %+v, want Reject %q", v, msg.Unwound(g.Key))
	}
	if _, ok := b.l.attempts.get(gang.PodKey(m0)); ok {
		t.Fatal("the rejected member's attempt record was kept")
	}
}

// A sibling's failure unwinds its attempt and rejects the waiters of that attempt only: a
// waiter of the gang's next attempt, or of another gang, keeps waiting. A stale unwind (an
// old attempt id) releases nothing.
func TestUnwindRejectsOnlyItsAttemptsWaiters(t *testing.T) {
	g0, g1, h0 := member("g-0", "g"), member("g-1", "g"), member("h-0", "h")
	b := newBench(t, g0, g1, h0)
	g, h := info("g", 2), info("h", 2)
	first := b.pin(g, "d1", "", "n0", "n1")
	b.reserve(g0, g, first.ID, "n0")
	_, w0 := b.permit(g0, g, first.ID)
	ch := b.pin(h, "d3", "", "n4", "n5")
	b.reserve(h0, h, ch.ID, "n4")
	_, wh := b.permit(h0, h, ch.ID)

	res := b.l.Unwind(klog.Background(), g.Key, first.ID, gang.CausePostFilter, true)
	if !res.Released || !res.NewFailed || res.Rejected != 1 {
		t.Fatalf("Unwind(first) = %+v, want released, domain failed, one waiter rejected", res)
	}
	if got := w0.got(); got != msg.Unwound(g.Key) {
		t.Fatalf("waiter g-0 = %q, want %q", got, msg.Unwound(g.Key))
	}
	if !b.l.FailedHas(g.Owner(), placement.DomainRef{Key: "k", Value: "d1"}) {
		t.Fatal("the failed attempt's domain is not remembered")
	}

	second := b.pin(g, "d2", "", "n2", "n3")
	b.reserve(g1, g, second.ID, "n2")
	_, w1 := b.permit(g1, g, second.ID)
	if res := b.l.Unwind(klog.Background(), g.Key, first.ID, gang.CauseUnreserve, false); res.Released {
		t.Fatalf("a stale unwind released %+v", res.Commitment)
	}
	if w1.got() != "" || wh.got() != "" {
		t.Fatalf("waiters g-1 %q, h-0 %q; want both still waiting", w1.got(), wh.got())
	}
	if s := b.l.Stats(); s.Pins != 2 {
		t.Fatalf("%d pins, want g's second attempt and h's", s.Pins)
	}
}

// Partners pinned together unwind together: one partner's failure rejects the waiters of
// every partner's attempt, and only theirs.
func TestUnwindCascadesToPartners(t *testing.T) {
	a0, p0, o0 := member("a-0", "a"), member("p-0", "p"), member("o-0", "o")
	b := newBench(t, a0, p0, o0)
	a, p, o := info("a", 2), info("p", 2), info("o", 2)
	ca := b.pin(a, "d1", "ns/grp", "n0", "n1")
	cp := b.pin(p, "d2", "ns/grp", "n2", "n3")
	co := b.pin(o, "d3", "", "n4", "n5")
	b.reserve(a0, a, ca.ID, "n0")
	b.reserve(p0, p, cp.ID, "n2")
	b.reserve(o0, o, co.ID, "n4")
	_, wa := b.permit(a0, a, ca.ID)
	_, wp := b.permit(p0, p, cp.ID)
	_, wo := b.permit(o0, o, co.ID)

	b.l.Unwind(klog.Background(), a.Key, ca.ID, gang.CauseUnreserve, false)
	if wa.got() != msg.Unwound(a.Key) || wp.got() != msg.Unwound(p.Key) {
		t.Fatalf("waiters a-0 %q, p-0 %q; want both rejected", wa.got(), wp.got())
	}
	if wo.got() != "" {
		t.Fatalf("waiter o-0 %q, want still waiting (not a partner)", wo.got())
	}
	if s := b.l.Stats(); s.Pins != 1 || s.GroupRecords != 0 {
		t.Fatalf("%d pins and %d group records left, want o's pin only", s.Pins, s.GroupRecords)
	}
}
