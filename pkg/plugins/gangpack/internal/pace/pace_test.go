package pace

import (
	"context"
	"fmt"
	"sync"
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
	if p.Assumed(uid(1)) != 0 || p.Started(uid(1)) != 0 || p.Finished(uid(1), true) != 0 {
		t.Fatal("a nil pacer counted a bind")
	}
	if w, _ := p.Wait(context.Background()); w != 0 {
		t.Fatalf("a nil pacer waited %v", w)
	}
}

// A pod counts from Reserve to the end of its binding, except while it waits at Permit on
// its siblings only: a waiter whose nominatedNodeName PATCH is pending counts until the
// informer shows it; it counts again in Bind.
func TestWhatCounts(t *testing.T) {
	p := New(time.Second, 0, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	steps := []struct {
		name string
		do   func() int
		want int
	}{
		{"standalone reserved", func() int { return p.Assumed(uid(0)) }, 1},
		{"member a reserved", func() int { return p.Assumed(uid(1)) }, 2},
		{"member a waits, its PATCH pending", func() int { return p.Waiting(uid(1), true) }, 2},
		{"member b reserved", func() int { return p.Assumed(uid(2)) }, 3},
		{"member b waits, no PATCH (gate off or already nominated)", func() int { return p.Waiting(uid(2), false) }, 2},
		{"member a's nomination seen", func() int { return p.Nominated(uid(1)) }, 1},
		{"a nomination of a pod not waiting changes nothing", func() int { return p.Nominated(uid(0)) }, 1},
		{"a wait of an unknown pod changes nothing", func() int { return p.Waiting(uid(9), true) }, 1},
		{"member c completes the gang", func() int { return p.Assumed(uid(3)) }, 2},
		{"a binds", func() int { return p.Started(uid(1)) }, 3},
		{"a late nomination event does not uncount a binding pod", func() int { return p.Nominated(uid(1)) }, 3},
		{"b binds", func() int { return p.Started(uid(2)) }, 4},
		{"c binds", func() int { return p.Started(uid(3)) }, 4},
		{"a bound", func() int { return p.Finished(uid(1), true) }, 3},
		{"b failed to bind", func() int { return p.Finished(uid(2), false) }, 2},
		{"b unreserved twice", func() int { return p.Finished(uid(2), false) }, 2},
		{"standalone and c bound", func() int { p.Finished(uid(0), true); return p.Finished(uid(3), true) }, 0},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %d counted, want %d", s.name, got, s.want)
		}
		if st := p.State(); st.InFlight != s.want {
			t.Fatalf("%s: State().InFlight = %d, want %d", s.name, st.InFlight, s.want)
		}
	}
	if st := p.State(); st.Rate != 3 {
		t.Fatalf("3 pods bound (one failed): rate %v, want 3/s", st.Rate)
	}
}

// The limit follows the binds finished in the last second times the window, between Floor
// and QPS × window; slots older than a second are forgotten.
func TestLimitFollowsTheDrainRate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(time.Second, 1000, clk)
	if st := p.State(); st.Limit != Floor || st.Rate != 0 {
		t.Fatalf("nothing measured: %+v, want limit %d, rate 0", st, Floor)
	}
	// 400 binds finish over one second (40 per 100 ms slot): rate 400/s, limit 400.
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
	if st := p.State(); st.Rate != 400 || st.Limit != 400 {
		t.Fatalf("after 400 binds in a second: %+v, want rate 400, limit 400", st)
	}
	// Unbound ends (Unreserve) and unknown pods do not count as drained.
	p.Started(uid(-1))
	p.Finished(uid(-1), false)
	p.Finished(uid(-2), true)
	if st := p.State(); st.Rate != 400 {
		t.Fatalf("an unbound end or an unknown pod changed the rate: %+v", st)
	}
	// Below the floor, the floor.
	half := New(500*time.Millisecond, 0, clk)
	for i := 0; i < 400; i++ {
		half.Started(uid(i))
		half.Finished(uid(i), true)
	}
	if st := half.State(); st.Limit != Floor {
		t.Fatalf("400 binds × 0.5 s window: limit %d, want the floor %d", st.Limit, Floor)
	}
	// The ceiling is QPS × window.
	capped := New(time.Second, 300, clk)
	for i := 0; i < 1000; i++ {
		capped.Started(uid(i))
		capped.Finished(uid(i), true)
	}
	if st := capped.State(); st.Limit != 300 {
		t.Fatalf("QPS 300 × 1 s window after 1000 binds: limit %d, want 300", st.Limit)
	}
	// Two seconds later the old binds are forgotten.
	clk.Step(2 * time.Second)
	if st := p.State(); st.Rate != 0 || st.Limit != Floor {
		t.Fatalf("two idle seconds later: %+v, want rate 0, limit %d", st, Floor)
	}
}

// Wait returns at once below the limit; at the limit it returns when a counted pod stops
// counting, or after MaxWaitWindows windows when none does, or when ctx ends.
func TestWaitBlocksAtTheLimit(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(100*time.Millisecond, 0, clk)
	for i := 0; i < Floor-1; i++ {
		p.Assumed(uid(i))
	}
	if p.Assumed(uid(0)) != Floor-1 {
		t.Fatal("a pod reserved twice was counted twice")
	}
	if w, st := p.Wait(context.Background()); w != 0 || st.InFlight != Floor-1 {
		t.Fatalf("below the limit: waited %v, state %+v", w, st)
	}
	p.Assumed(uid(Floor))
	p.Waiting(uid(Floor), true)
	done := make(chan time.Duration)
	wait := func(ctx context.Context) {
		w, st := p.Wait(ctx)
		if st.InFlight != Floor || st.Limit != Floor {
			t.Errorf("first state %+v, want %d in flight at limit %d", st, Floor, Floor)
		}
		done <- w
	}
	go wait(context.Background())
	waitForTimer(t, clk)
	clk.Step(30 * time.Millisecond)
	p.Nominated(uid(Floor)) // its PATCH landed: it waits on its siblings only
	if w := <-done; w != 30*time.Millisecond {
		t.Fatalf("released by a landed nomination after %v, want 30ms", w)
	}
	p.Started(uid(Floor))
	// Nothing finishes: the wait gives up after MaxWaitWindows windows.
	go wait(context.Background())
	waitForTimer(t, clk)
	clk.Step(MaxWaitWindows * 100 * time.Millisecond)
	if w := <-done; w != MaxWaitWindows*100*time.Millisecond {
		t.Fatalf("gave up after %v, want %v", w, MaxWaitWindows*100*time.Millisecond)
	}
	// A finished bind releases it; a cancelled context ends it.
	go wait(context.Background())
	waitForTimer(t, clk)
	p.Finished(uid(3), true)
	if w := <-done; w != 0 {
		t.Fatalf("released by a bind: %v, want 0 (the fake clock did not move)", w)
	}
	p.Assumed(uid(3))
	ctx, cancel := context.WithCancel(context.Background())
	go wait(ctx)
	waitForTimer(t, clk)
	cancel()
	if w := <-done; w != 0 {
		t.Fatalf("cancelled wait: %v, want 0", w)
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

// A pod admitted at Permit counts while the nominatedNodeName PATCH kube-scheduler sends
// before PreBind may be pending, not in PreBind, and again in Bind; with no PATCH to come it
// stops counting at once. Only a pod the pacer knows, reserved and not waiting, is admitted.
func TestAdmittedCountsOnlyWhileItsPatchIsPending(t *testing.T) {
	p := New(time.Second, 0, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	steps := []struct {
		name string
		do   func() int
		want int
	}{
		{"a and b reserved", func() int { p.Assumed(uid(1)); return p.Assumed(uid(2)) }, 2},
		{"a admitted, its PATCH may be pending", func() int { return p.Admitted(uid(1), true) }, 2},
		{"b admitted, no PATCH to come (gate off, or already nominated)", func() int { return p.Admitted(uid(2), false) }, 1},
		{"a's nomination seen: a is in PreBind", func() int { return p.Nominated(uid(1)) }, 0},
		{"a second nomination event changes nothing", func() int { return p.Nominated(uid(1)) }, 0},
		{"an unknown pod's admission changes nothing", func() int { return p.Admitted(uid(9), true) }, 0},
		{"c waits at Permit on its siblings", func() int { p.Assumed(uid(3)); return p.Waiting(uid(3), false) }, 0},
		{"an admission of a waiting pod changes nothing", func() int { return p.Admitted(uid(3), true) }, 0},
		{"a binds", func() int { return p.Started(uid(1)) }, 1},
		{"b binds", func() int { return p.Started(uid(2)) }, 2},
		{"a late nomination event does not uncount a binding pod", func() int { return p.Nominated(uid(2)) }, 2},
		{"a bound, b unreserved", func() int { p.Finished(uid(1), true); return p.Finished(uid(2), false) }, 0},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %d counted, want %d", s.name, got, s.want)
		}
	}
}

// 300 pods in PreBind (their PATCH seen) do not hold the window: Wait returns at once. A
// Wait at the limit ends when an admitted pod's PATCH is seen.
func TestPodsInPreBindDoNotHoldTheWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(time.Second, 0, clk)
	for i := 0; i < 300; i++ {
		p.Assumed(uid(i))
		p.Admitted(uid(i), true)
	}
	if st := p.State(); st.InFlight != 300 {
		t.Fatalf("300 admitted pods with their PATCH pending: %d in flight, want 300", st.InFlight)
	}
	done := make(chan time.Duration)
	go func() { w, _ := p.Wait(context.Background()); done <- w }()
	waitForTimer(t, clk)
	clk.Step(10 * time.Millisecond)
	for i := 0; i < 45; i++ {
		p.Nominated(uid(i))
	}
	if w := <-done; w != 10*time.Millisecond {
		t.Fatalf("released after %v, want 10ms (when the 45th PATCH was seen)", w)
	}
	for i := 45; i < 300; i++ {
		p.Nominated(uid(i))
	}
	if w, st := p.Wait(context.Background()); w != 0 || st.InFlight != 0 {
		t.Fatalf("300 pods in PreBind: waited %v with %d in flight, want no wait, 0", w, st.InFlight)
	}
}

// The limit is max(Floor, min(rate × window, QPS × window)): fed 1,000 binds a second, a
// client of QPS 200 and a 1 s window has the floor (its ceiling 200 is below it), QPS 400 has
// 400, QPS 2,000 the measured 1,000.
func TestFloorWinsOverTheQPSCeiling(t *testing.T) {
	for _, c := range []struct {
		qps    float32
		window time.Duration
		want   int
	}{
		{200, time.Second, Floor},
		{400, time.Second, 400},
		{2000, time.Second, 1000},
		{0, time.Second, 1000},
		{2000, 500 * time.Millisecond, 500},
		{400, 500 * time.Millisecond, Floor},
	} {
		p := New(c.window, c.qps, clocktesting.NewFakeClock(time.Unix(1000, 0)))
		for i := 0; i < 1000; i++ {
			p.Started(uid(i))
			p.Finished(uid(i), true)
		}
		if st := p.State(); st.Rate != 1000 || st.Limit != c.want {
			t.Errorf("QPS %v, window %v, 1,000 binds in the last second: %+v, want rate 1000, limit %d", c.qps, c.window, st, c.want)
		}
	}
}

// The observer sees every count in the order the changes happened, from any goroutine: each
// value differs from the one before by one, and the last is the count.
func TestObserverSeesTheCountsInOrder(t *testing.T) {
	p := New(time.Second, 0, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	var seen []int
	p.Observe(func(n int) { seen = append(seen, n) })
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				u := uid(g*1000 + i)
				p.Assumed(u)
				p.Started(u)
				if i%3 != 0 {
					p.Finished(u, true)
				}
			}
		}(g)
	}
	wg.Wait()
	if seen[0] != 0 {
		t.Fatalf("first observed count %d, want 0 (Observe reports the count it starts with)", seen[0])
	}
	for i := 1; i < len(seen); i++ {
		if d := seen[i] - seen[i-1]; d != 1 && d != -1 {
			t.Fatalf("observed %d after %d: the counts reached the observer out of order", seen[i], seen[i-1])
		}
	}
	if last, want := seen[len(seen)-1], p.State().InFlight; last != want || want != 8*67 {
		t.Fatalf("last observed %d, in flight %d, want both %d", last, want, 8*67)
	}
}
