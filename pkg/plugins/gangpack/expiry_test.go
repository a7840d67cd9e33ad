package gangpack

import (
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Timeouts at the plugin level: every hold ends at the gang's timeout (kube-scheduler's Permit
// wait ends at 15 minutes whatever the timeout), an expired domain rests, and hold and rest
// timers live only as long as what they are for.

// timedGang is a gang of two one-GPU members with a 1 s timeout over one domain of two nodes,
// whose timers the test fires by hand (returned in the order they were started).
func timedGang(t *testing.T) (*world, *v1.Pod, *[]func()) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, pg)
	timers := &[]func(){}
	w.after = func(_ time.Duration, f func()) func() { *timers = append(*timers, f); return func() {} }
	return w, m0, timers
}

// liveTimers replaces time.AfterFunc and counts the timers started and not yet stopped or
// fired; fire runs the recorded callbacks by hand.
type liveTimers struct {
	mu   sync.Mutex
	live int
	due  []func()
}

func (lt *liveTimers) after(_ time.Duration, f func()) func() {
	done := false
	end := func() bool {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		if done {
			return false
		}
		done = true
		lt.live--
		return true
	}
	lt.mu.Lock()
	lt.live++
	lt.due = append(lt.due, func() {
		if end() {
			f()
		}
	})
	lt.mu.Unlock()
	return func() { end() }
}

func (lt *liveTimers) count() int {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.live
}

// fire runs every timer recorded so far that is still live.
func (lt *liveTimers) fire() {
	lt.mu.Lock()
	due := lt.due
	lt.due = nil
	lt.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// A hold created at PreFilter ends at the gang's timeout even if no member ever reaches
// Permit (a cycle that ended in an error runs no PostFilter), and its domain is remembered
// as failed.
func TestHoldWithoutPermitExpiresAtTimeout(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, pg)
	w.mustPin(m0)
	if w.pl.ledger.Stats().HeldDomains != 1 {
		t.Fatal("PreFilter did not hold the domain")
	}
	deadline := time.Now().Add(testWait)
	for w.pl.ledger.Stats().HeldDomains != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hold outlived the gang's timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	owner := placement.GangOwner{Gang: "ns/g", Owner: "uid-g"}
	if !w.pl.ledger.FailedHas(owner, placement.DomainRef{Key: testKey, Value: "a"}) {
		t.Fatal("the expired domain is not remembered as failed")
	}
}

// A gang with a member placed by someone else and a member that can never fit holds the
// adopted domain only until its timeout; then it waits without holding it again.
func TestAdoptedShortHoldEndsAndDoesNotRenew(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	g0 := bound(gangMember("g-0", "g", 1), "a0")
	g1 := gangMember("g-1", "g", 2) // no node has two GPUs
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1)
	w := newWorld(t, nil, nodes, []*v1.Pod{g0, g1}, pg)
	if _, st := w.preFilter(g1); st.Code() != fwk.Unschedulable || w.pl.ledger.Stats().HeldDomains != 1 {
		t.Fatalf("PreFilter(g-1) = %v with %d held domains, want the adopted-short wait holding a", st, w.pl.ledger.Stats().HeldDomains)
	}
	deadline := time.Now().Add(testWait)
	for w.pl.ledger.Stats().HeldDomains != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the adopted hold outlived the gang's timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, st := w.preFilter(g1)
	// g-0 is bound: the gang is degraded, and the wait says so.
	if want := msg.ShortDegraded(msg.AdoptedShort("a", "ns/g", 0, 1), msg.Degraded("ns/g", "a", 0, 1)); st.Message() != want {
		t.Fatalf("PreFilter(g-1) after expiry = %v, want %q", st, want)
	}
	if n := w.pl.ledger.Stats().HeldDomains; n != 0 {
		t.Fatalf("the expired gang holds %d domains again", n)
	}
}

// A gang whose reservation expired (a member never became ready) does not reserve the same
// domain again at once, even though no other domain fits: the domain rests for another
// timeout, the wait says so, and the gang is woken when the rest ends.
func TestExpiredDomainRests(t *testing.T) {
	w, m0, timers := timedGang(t)
	w.mustPin(m0)
	if len(*timers) != 1 {
		t.Fatalf("%d timers after the pin, want the hold's", len(*timers))
	}
	(*timers)[0]() // the gang's timeout passes: the reservation expires
	if w.pl.ledger.Stats().HeldDomains != 0 {
		t.Fatal("the reservation outlived its timeout")
	}
	if _, st := w.preFilter(m0); st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
		t.Fatalf("PreFilter after expiry = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
	}
	if w.pl.ledger.Stats().HeldDomains != 0 {
		t.Fatal("the gang reserved the resting domain again")
	}
	if len(*timers) != 2 {
		t.Fatalf("%d timers, want the rest's wake-up", len(*timers))
	}
	owner := placement.GangOwner{Gang: "ns/g", Owner: "uid-g"}
	for until := time.Now().Add(10 * time.Second); len(w.pl.ledger.Resting(owner, testKey)) != 0; {
		if time.Now().After(until) { // the rest lasts one timeout (1s)
			t.Fatal("the domain still rests long after its rest ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	(*timers)[1]()
	w.h.mu.Lock()
	got := slices.Clone(w.h.activated)
	w.h.mu.Unlock()
	if len(got) == 0 {
		t.Fatal("nothing activated when the rest ended")
	}
	w.mustPin(m0)
}

// kube-scheduler's Permit timeout has the gang's timeout too and may fire before the
// reservation's expiry timer: an attempt its Unreserve unwinds at or past the deadline is an
// expiry (its domain rests); before the deadline it is an ordinary unwind and the gang may
// reserve the same room again at once.
func TestPermitTimeoutAtDeadlineRests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		rests   bool
	}{
		{"before the deadline", 500 * time.Millisecond, false},
		{"at the deadline", time.Second, true},
		{"past the deadline", 3 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, m0, timers := timedGang(t)
			start := time.Now()
			w.now = func() time.Time { return start }
			c := w.mustPin(m0)
			if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit = %v, want Wait", st)
			}
			w.now = func() time.Time { return start.Add(tc.elapsed) }
			w.pl.Unreserve(w.ctx, c.cs, m0, "a0") // the framework rejected the waiter
			if w.pl.ledger.Stats().HeldDomains != 0 {
				t.Fatal("the reservation outlived the unwind")
			}
			_, st := w.preFilter(m0)
			if tc.rests {
				if st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
					t.Fatalf("PreFilter after the unwind = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
				}
				if len(*timers) != 2 {
					t.Fatalf("%d timers, want the expiry's and the rest's wake-up", len(*timers))
				}
			} else if !st.IsSuccess() {
				t.Fatalf("PreFilter before the deadline = %v, want the gang to reserve again", st)
			}
			held := w.pl.ledger.Stats().HeldDomains
			(*timers)[0]() // the expiry timer fires late: the attempt is gone, nothing more rests
			if w.pl.ledger.Stats().HeldDomains != held {
				t.Fatalf("the late expiry timer changed the holds: %d → %d", held, w.pl.ledger.Stats().HeldDomains)
			}
		})
	}
}

// kube-scheduler rejects a Permit waiter after 15 minutes whatever the gang's timeout: with a
// longer timeout the Permit wait and the hold are capped there, so the attempt unwound by
// kube-scheduler's own timer is an expiry and its domain rests.
func TestPermitTimeoutCappedAtFifteenMinutes(t *testing.T) {
	w, m0, _ := timedGang(t)
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1000)
	if err := w.pgs.Update(pg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	w.now = func() time.Time { return start }
	c := w.mustPin(m0)
	ni, _ := w.h.snapshot.NodeInfos().Get("a0")
	if st := w.pl.Filter(w.ctx, c.cs, m0, ni); !st.IsSuccess() {
		t.Fatalf("Filter = %v", st)
	}
	if st := w.pl.Reserve(w.ctx, c.cs, m0, "a0"); !st.IsSuccess() {
		t.Fatalf("Reserve = %v", st)
	}
	if st, wait := w.pl.Permit(w.ctx, c.cs, m0, "a0"); st.Code() != fwk.Wait || wait != 15*time.Minute {
		t.Fatalf("Permit = %v, %v; want Wait, 15m", st, wait)
	}
	w.now = func() time.Time { return start.Add(900 * time.Second) }
	w.pl.Unreserve(w.ctx, c.cs, m0, "a0") // kube-scheduler's Permit timer rejected the waiter
	if _, st := w.preFilter(m0); st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
		t.Fatalf("PreFilter after kube-scheduler's timeout = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
	}
	if n := w.pl.ledger.Stats().HeldDomains; n != 0 {
		t.Fatalf("the gang holds %d domains again, want its domain resting", n)
	}
}

// Hold and rest timers live only as long as what they are for: an attempt that ends by an
// unwind, a silent release or a commit stops its timer and forgets its deadline, and a gang
// that commits stops the timer that would wake it when a rest ends.
func TestTimersEndWithTheirAttempt(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1 << 30)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, pg)
	lt := &liveTimers{}
	w.after = lt.after
	for i := 0; i < 300; i++ {
		c := w.mustPin(m0)
		if i%2 == 0 {
			w.pl.Unreserve(w.ctx, c.cs, m0, "a0")
		} else {
			w.pl.ledger.Unwind(klog.Background(), "ns/g", plan.ReadPin(c.cs).ID, gang.CauseUnreserve, false)
		}
	}
	if n, d := lt.count(), w.pl.ledger.Stats().Deadlines; n != 0 || d != 0 {
		t.Fatalf("%d live timers and %d deadlines after 300 ended attempts, want none", n, d)
	}
	w.mustPin(m0)
	lt.fire() // the hold on a expires: a rests, with a timer to wake the gang when it ends
	if n := lt.count(); n != 1 {
		t.Fatalf("%d live timers after the expiry, want the rest's", n)
	}
	c0 := w.mustPin(m0)
	if st := c0.reserveOn("b0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.resnap(assumed(m0, "b0"))
	if st := w.mustPin(m1).reserveOn("b1"); !st.IsSuccess() {
		t.Fatalf("Permit(g-1) = %v, want the admission", st)
	}
	if n, d := lt.count(), w.pl.ledger.Stats().Deadlines; n != 0 || d != 0 {
		t.Fatalf("%d live timers and %d deadlines after the gang committed, want none", n, d)
	}
}
