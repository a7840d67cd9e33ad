package ledger

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// handTimer is one timer started through the ledger's after hook, fired by hand.
type handTimer struct {
	f       func()
	stopped bool
}

// The protection wake-ups of standalone preemptors are tracked per preemptor: a new one for
// the same preemptor supersedes the old, whose callback then never runs, and the preemptor's
// deletion stops its timer (and wakes the refused pods at once, the protection having ended).
func TestWakeBlockedAfterTracked(t *testing.T) {
	var timers []*handTimer
	l := New(context.Background(), nil, nil, nil, Options{After: func(_ time.Duration, f func()) func() {
		h := &handTimer{f: f}
		timers = append(timers, h)
		return func() { h.stopped = true }
	}})
	refused := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "refused"}}
	l.blocked.add(refused)

	l.WakeBlockedAfter("preemptor-a", 10*time.Second)
	l.WakeBlockedAfter("preemptor-a", 20*time.Second) // preempted again: a new protection
	if len(timers) != 2 || !timers[0].stopped || timers[1].stopped {
		t.Fatalf("after two wake-ups for one preemptor: %d timers, stopped %v; want the first stopped, the second live",
			len(timers), stoppedOf(timers))
	}
	timers[0].f() // a superseded timer that fired anyway
	if l.blocked.len() != 1 {
		t.Fatal("a superseded timer woke the refused pods")
	}
	if got := l.protections.len(); got != 1 {
		t.Fatalf("live protection timers = %d, want 1", got)
	}
	timers[1].f()
	if l.blocked.len() != 0 || l.protections.len() != 0 {
		t.Fatalf("after the live timer fired: blocked %d, timers %d; want 0, 0", l.blocked.len(), l.protections.len())
	}

	l.blocked.add(refused)
	l.WakeBlockedAfter("preemptor-b", 10*time.Second)
	b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "preemptor-b"}}
	l.doubtEvents().OnDelete(b)
	if last := timers[len(timers)-1]; !last.stopped {
		t.Fatal("the deleted preemptor's timer was not stopped")
	}
	if l.blocked.len() != 0 || l.protections.len() != 0 {
		t.Fatalf("after the preemptor's deletion: blocked %d, timers %d; want 0, 0", l.blocked.len(), l.protections.len())
	}
}

func stoppedOf(ts []*handTimer) []bool {
	out := make([]bool, len(ts))
	for i, t := range ts {
		out[i] = t.stopped
	}
	return out
}
