package pace

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func uid(i int) types.UID { return types.UID(fmt.Sprintf("pod-%d", i)) }

func TestOffWhenWindowIsZero(t *testing.T) {
	if p := New(0, 100, clocktesting.NewFakeClock(time.Unix(0, 0))); p != nil {
		t.Fatalf("New(0) = %v, want nil (off)", p)
	}
	var p *Pacer
	if p.Started(uid(1)) || p.Finished(uid(1), true) {
		t.Fatal("a nil pacer counted a bind")
	}
	if w, _ := p.Wait(context.Background()); w != 0 {
		t.Fatalf("a nil pacer waited %v", w)
	}
}

// The limit follows the binds finished in the last second times the window, between Floor
// and QPS × window; slots older than a second are forgotten.
func TestLimitFollowsTheDrainRate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(500*time.Millisecond, 1000, clk)
	if st := p.State(); st.Limit != Floor || st.Rate != 0 {
		t.Fatalf("nothing measured: %+v, want limit %d, rate 0", st, Floor)
	}
	// 400 binds finish over one second (40 per 100 ms slot): rate 400/s, limit 200.
	n := 0
	for slot := 0; slot < 10; slot++ {
		for i := 0; i < 40; i++ {
			p.Started(uid(n))
			p.Finished(uid(n), true)
			n++
		}
		clk.Step(100 * time.Millisecond)
	}
	clk.Step(-time.Nanosecond) // still inside the last slot's second
	if st := p.State(); st.Rate != 400 || st.Limit != 200 {
		t.Fatalf("after 400 binds in a second: %+v, want rate 400, limit 200", st)
	}
	// Unbound ends (Unreserve) and unknown pods do not count as drained.
	p.Started(uid(-1))
	if !p.Finished(uid(-1), false) || p.Finished(uid(-2), true) {
		t.Fatal("Finished: want true for a started pod, false for an unknown one")
	}
	if st := p.State(); st.Rate != 400 {
		t.Fatalf("an unbound end changed the rate: %+v", st)
	}
	// The ceiling is QPS × window.
	slow := New(time.Second, 50, clk)
	for i := 0; i < 500; i++ {
		slow.Started(uid(i))
		slow.Finished(uid(i), true)
	}
	if st := slow.State(); st.Limit != 50 {
		t.Fatalf("QPS 50 × 1s window after 500 binds: limit %d, want 50", st.Limit)
	}
	// Two seconds later the old binds are forgotten.
	clk.Step(2 * time.Second)
	if st := p.State(); st.Rate != 0 || st.Limit != Floor {
		t.Fatalf("two idle seconds later: %+v, want rate 0, limit %d", st, Floor)
	}
}

// Wait returns at once below the limit; at the limit it returns when a bind finishes, or
// after MaxWaitWindows windows when none does.
func TestWaitBlocksAtTheLimit(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(100*time.Millisecond, 0, clk)
	for i := 0; i < Floor-1; i++ {
		if !p.Started(uid(i)) {
			t.Fatalf("Started(%d) = false", i)
		}
	}
	if p.Started(uid(0)) {
		t.Fatal("a pod started twice was counted twice")
	}
	if w, st := p.Wait(context.Background()); w != 0 || st.InFlight != Floor-1 {
		t.Fatalf("below the limit: waited %v, state %+v", w, st)
	}
	p.Started(uid(Floor))
	done := make(chan time.Duration)
	go func() {
		w, st := p.Wait(context.Background())
		if st.InFlight != Floor || st.Limit != Floor {
			t.Errorf("first state %+v, want %d in flight at limit %d", st, Floor, Floor)
		}
		done <- w
	}()
	waitForTimer(t, clk)
	clk.Step(30 * time.Millisecond)
	p.Finished(uid(3), true)
	if w := <-done; w != 30*time.Millisecond {
		t.Fatalf("released by a finished bind after %v, want 30ms", w)
	}
	// Nothing finishes: the wait gives up after MaxWaitWindows windows.
	p.Started(uid(3))
	go func() {
		w, _ := p.Wait(context.Background())
		done <- w
	}()
	waitForTimer(t, clk)
	clk.Step(MaxWaitWindows * 100 * time.Millisecond)
	if w := <-done; w != MaxWaitWindows*100*time.Millisecond {
		t.Fatalf("gave up after %v, want %v", w, MaxWaitWindows*100*time.Millisecond)
	}
	// A cancelled context ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		w, _ := p.Wait(ctx)
		done <- w
	}()
	waitForTimer(t, clk)
	cancel()
	if w := <-done; w != 0 {
		t.Fatalf("cancelled wait: %v, want 0 (the fake clock did not move)", w)
	}
}

func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Wait did not start its timer")
		}
		time.Sleep(time.Millisecond)
	}
}
