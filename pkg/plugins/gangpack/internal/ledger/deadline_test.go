package ledger

import (
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// A forming pin's deadline is the gang's timeout on the injected clock: when it fires, the
// attempt is released, its waiters rejected, and its domain rests for another timeout, after
// which the gang is woken again.
func TestDeadlineExpiresAndDomainRests(t *testing.T) {
	m0, m1 := member("g-0", "g"), member("g-1", "g")
	b := newBench(t, m0, m1)
	g := info("g", 2)
	start := b.now
	c := b.pin(g, "d", "", "n0", "n1")
	held := b.l.Holds()
	if len(held) != 1 || !held[0].Deadline.Equal(start.Add(g.Timeout)) {
		t.Fatalf("holds %+v, want one deadline at the pin plus the timeout", held)
	}
	if len(b.live()) != 1 || b.live()[0].d != g.Timeout {
		t.Fatalf("timers %+v, want the deadline's (%v)", b.live(), g.Timeout)
	}
	b.reserve(m0, g, c.ID, "n0")
	_, w0 := b.permit(m0, g, c.ID)
	b.h.activated = nil

	b.now = start.Add(g.Timeout)
	b.live()[0].fire() // the gang's timeout passes
	if w0.got() != msg.Unwound(g.Key) {
		t.Fatalf("waiter g-0 = %q, want rejected", w0.got())
	}
	if s := b.l.Stats(); s.Pins != 0 || s.Deadlines != 0 {
		t.Fatalf("stats %+v after expiry, want no pin and no deadline", s)
	}
	if rest := b.l.Resting(g.Owner(), "k"); len(rest) != 1 {
		t.Fatalf("resting domains %v, want d", rest)
	}
	if !b.activated("ns/g-1") {
		t.Fatalf("activated %v, want the gang woken at expiry", b.h.activated)
	}
	live := b.live()
	if len(live) != 1 || live[0].d != g.Timeout {
		t.Fatalf("timers %+v, want the rest's wake-up", live)
	}
	b.h.activated = nil
	live[0].fire() // the rest ends
	if !b.activated("ns/g-0") || !b.activated("ns/g-1") {
		t.Fatalf("activated %v at the rest's end, want the gang", b.h.activated)
	}
}

// A deadline whose attempt ended otherwise (committed, or unwound and pinned again) never
// fires: its timer is stopped, and a late callback finds nothing to release.
func TestSupersededDeadlineNeverFires(t *testing.T) {
	m0 := member("g-0", "g")
	b := newBench(t, m0)
	g := info("g", 1)
	first := b.pin(g, "d1", "", "n0")
	old := b.live()[0]
	b.l.Unwind(klog.Background(), g.Key, first.ID, "test", false)
	if !old.stopped {
		t.Fatal("the unwound attempt's deadline timer is still live")
	}
	second := b.pin(g, "d2", "", "n1")
	old.f() // a late callback of the stopped timer
	if cur, ok := b.l.Commitment(g.Key); !ok || cur.ID != second.ID {
		t.Fatalf("commitment %+v (%v) after the stale deadline, want the second attempt", cur, ok)
	}
	if b.reserve(m0, g, second.ID, "n1"); b.l.Stats().Deadlines != 0 {
		t.Fatal("the committed attempt kept its deadline")
	}
	if len(b.live()) != 0 {
		t.Fatalf("%d timers live after the commit, want none", len(b.live()))
	}
}

// Unreserve at or past the deadline on the injected clock expires the attempt (its domain
// rests) rather than merely unwinding it; before the deadline it only unwinds.
func TestUnwindOnUnreserveAtDeadlineRests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		rests   bool
	}{
		{"before the deadline", 9 * time.Minute, false},
		{"at the deadline", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m0 := member("g-0", "g")
			b := newBench(t, m0)
			g := info("g", 2)
			c := b.pin(g, "d", "", "n0", "n1")
			b.now = b.now.Add(tc.elapsed)
			b.l.UnwindOnUnreserve(klog.Background(), g, c.ID)
			if b.l.Stats().Pins != 0 {
				t.Fatal("the attempt survived Unreserve")
			}
			if got := len(b.l.Resting(g.Owner(), "k")) == 1; got != tc.rests {
				t.Fatalf("domain resting: %v, want %v", got, tc.rests)
			}
		})
	}
}

// Permit refuses the member that completes the gang when a waiter's Permit wait ends within
// PermitDeadlineMargin on the injected clock, and unwinds the attempt.
func TestPermitDeadlineGuard(t *testing.T) {
	m0, m1 := member("g-0", "g"), member("g-1", "g")
	b := newBench(t, m0, m1)
	g := info("g", 2)
	c := b.pin(g, "d", "", "n0", "n1")
	b.reserve(m0, g, c.ID, "n0")
	_, w0 := b.permit(m0, g, c.ID)
	b.reserve(m1, g, c.ID, "n1")
	b.now = b.now.Add(g.Timeout - PermitDeadlineMargin/2)
	if v, _ := b.permit(m1, g, c.ID); v.Outcome != Reject || v.Msg != msg.WaitEndsSoon(g.Key) {
		t.Fatalf("Permit(g-1) = %+v, want Reject %q", v, msg.WaitEndsSoon(g.Key))
	}
	if w0.got() != msg.Unwound(g.Key) {
		t.Fatalf("waiter g-0 = %q, want rejected by the unwind", w0.got())
	}
}
