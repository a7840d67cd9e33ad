package gangpack

import (
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

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

func wasActivated(w *world, key string) bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return slices.Contains(w.h.activated, key)
}

// A forming gang never commits with fewer than minMember live members: when a member placed
// before the attempt goes away while a replacement waits (it is deleted, fails, or its node
// is removed), the next replacement waits for one more instead of admitting the gang short.
func TestLostSurvivorKeepsGangForming(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(w *world, g0 *v1.Pod)
	}{
		{"terminating", func(w *world, g0 *v1.Pod) { w.updatePod(terminating(g0)) }},
		{"failed", func(w *world, g0 *v1.Pod) {
			q := g0.DeepCopy()
			q.Status.Phase = v1.PodFailed
			w.updatePod(q)
		}},
		{"node deleted", func(w *world, _ *v1.Pod) { w.nodes = w.nodes[1:] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*v1.Node
			for _, n := range []string{"a0", "a1", "a2", "a3", "a4", "a5"} {
				nodes = append(nodes, testNode(n, "a", 1))
			}
			g0 := bound(gangMember("g-0", "g", 1), "a0")
			pods := []*v1.Pod{g0, terminating(bound(gangMember("g-1", "g", 1), "a1")), terminating(bound(gangMember("g-2", "g", 1), "a2"))}
			r1, r2 := gangMember("g-r1", "g", 1), gangMember("g-r2", "g", 1)
			w := newWorld(t, nil, nodes, append(pods, r1, r2), podGroup("g", 3))
			if st := w.mustPin(r1).reserveOn("a3"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(g-r1) = %v, want Wait for g-r2", st)
			}
			tc.lose(w, g0)
			w.addPod(gangMember("g-r3", "g", 1)) // the controller replaces g-0
			w.resnap(assumed(r1, "a3"))
			if st := w.mustPin(r2).reserveOn("a4"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(g-r2) = %v, want Wait: g-r1 and g-r2 are 2 live members of a gang of 3", st)
			}
			if c, _ := w.pl.ledger.Commitment("ns/g"); c.Remaining != 1 {
				t.Fatalf("remaining %d, want 1 (one more replacement)", c.Remaining)
			}
		})
	}
}

// A member waiting at Permit whose node is deleted is never admitted: the attempt is unwound
// (its waiters rejected) and the gang forms again from scratch.
func TestWaiterOnDeletedNodeIsNotAdmitted(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("a3", "a", 1)}
	m0, m1, m2 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1), gangMember("g-2", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, m2}, podGroup("g", 3))
	c0 := w.mustPin(m0)
	if st := c0.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w0 := w.h.register(m0)
	w.resnap(assumed(m0, "a0"))
	c1 := w.mustPin(m1)
	if st := c1.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-1) = %v, want Wait", st)
	}
	w1 := w.h.register(m1)
	w.nodes = nodes[1:] // a0 is deleted while g-0 waits on it
	w.resnap(assumed(m1, "a1"))
	if _, st := w.preFilter(m2); st.Code() != fwk.Unschedulable || st.Message() != msg.StaleReleased("a", "ns/g") {
		t.Fatalf("PreFilter(g-2) = %v, want %q", st, msg.StaleReleased("a", "ns/g"))
	}
	for name, wt := range map[string]*fakeWaiter{"g-0": w0, "g-1": w1} {
		if got := wt.await(testWait); got != msg.Unwound("ns/g") {
			t.Fatalf("%s verdict %q, want %q", name, got, msg.Unwound("ns/g"))
		}
	}
	w.pl.Unreserve(w.ctx, c0.cs, m0, "a0") // the framework unreserves the rejected waiters
	w.pl.Unreserve(w.ctx, c1.cs, m1, "a1")
	w.resnap()
	if st := w.mustPin(m2).reserveOn("a2"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-2) of the new attempt = %v, want Wait", st)
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
	w.pl.ledger.SetNow(func() time.Time { return start })
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
	w.pl.ledger.SetNow(func() time.Time { return start.Add(900 * time.Second) })
	w.pl.Unreserve(w.ctx, c.cs, m0, "a0") // kube-scheduler's Permit timer rejected the waiter
	if _, st := w.preFilter(m0); st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
		t.Fatalf("PreFilter after kube-scheduler's timeout = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
	}
	if n := w.pl.ledger.HeldDomains(); n != 0 {
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
	w.pl.ledger.SetAfter(lt.after)
	for i := 0; i < 300; i++ {
		c := w.mustPin(m0)
		if i%2 == 0 {
			w.pl.Unreserve(w.ctx, c.cs, m0, "a0")
		} else {
			w.pl.ledger.ReleaseSilently(klog.Background(), "ns/g", plan.ReadPin(c.cs).ID)
		}
	}
	if n, d := lt.count(), w.pl.ledger.Deadlines(); n != 0 || d != 0 {
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
	if n, d := lt.count(), w.pl.ledger.Deadlines(); n != 0 || d != 0 {
		t.Fatalf("%d live timers and %d deadlines after the gang committed, want none", n, d)
	}
}

// An expired reservation wakes every live unbound member of its gang, not only the rejected
// waiters and the pods refused because of reservations: a member parked for another reason
// may fit another domain now.
func TestExpiryWakesTheGang(t *testing.T) {
	w, m0, timers := timedGang(t)
	w.mustPin(m0)
	(*timers)[0]() // the gang's timeout passes: the reservation expires
	if !wasActivated(w, "ns/g-1") {
		t.Fatalf("activated %v, want the gang's member ns/g-1", w.h.activated)
	}
}

// Room a forming gang gives back wakes the pods its reservation refused: here a member lands
// on another node than its slot, so the slot on a0 returns to everyone.
func TestMovedSlotWakesBlockedPods(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, solo}, podGroup("g", 2))
	c := w.mustPin(m0)
	if got := w.pl.ledger.ReservedOn("a0", "").Gangs; !slices.Equal(got, []string{"ns/g"}) {
		t.Fatalf("a0 reserved by %v, want ns/g", got)
	}
	w.pl.ledger.ParkBlocked(klog.Background(), solo, w.pl.ledger.Generation()) // refused on a0
	if st := c.reserveOn("a2"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	if !wasActivated(w, "ns/solo") {
		t.Fatalf("activated %v, want ns/solo: the slot on a0 was given back", w.h.activated)
	}
}

// A bind doubt that times out with no event about its pod wakes the pods it refused.
func TestDoubtTimeoutWakesBlockedPods(t *testing.T) {
	nodes := []*v1.Node{testNode("n0", "", 1)}
	a, b := standalone("a"), standalone("b")
	w := newWorld(t, nil, nodes, []*v1.Pod{a, b})
	lt := &liveTimers{}
	w.pl.ledger.SetAfter(lt.after)
	cs := w.admitStandalone(a, "n0")
	w.pl.Unreserve(w.ctx, cs, a, "n0") // the bind failed after admission
	w.pl.ledger.ParkBlocked(klog.Background(), b, w.pl.ledger.Generation())
	lt.fire() // maxDoubt passes
	if !wasActivated(w, "ns/b") {
		t.Fatalf("activated %v, want ns/b when the doubt ended", w.h.activated)
	}
	if w.pl.ledger.DoubtBlocks("n0", b.UID, time.Now()) {
		t.Fatal("n0 still in doubt")
	}
}

// A bind doubt ends only on an event that shows the bind's outcome: the pod bound, deleted or
// replaced. An update written before the bind (the nominatedNodeName patch) leaves it.
func TestDoubtEndsOnlyOnBindOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event func(h cache.ResourceEventHandler, p *v1.Pod)
		ends  bool
	}{
		{"nominated node patch", func(h cache.ResourceEventHandler, p *v1.Pod) {
			q := p.DeepCopy()
			q.Status.NominatedNodeName = "n0"
			h.OnUpdate(p, q)
		}, false},
		{"bound", func(h cache.ResourceEventHandler, p *v1.Pod) { h.OnUpdate(p, bound(p, "n0")) }, true},
		{"deleted", func(h cache.ResourceEventHandler, p *v1.Pod) { h.OnDelete(p) }, true},
		{"replaced", func(h cache.ResourceEventHandler, p *v1.Pod) {
			q := p.DeepCopy()
			q.UID = "uid-a-2"
			h.OnUpdate(p, q)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{testNode("n0", "", 1)}
			a, b := standalone("a"), standalone("b")
			w := newWorld(t, nil, nodes, []*v1.Pod{a, b})
			w.pl.ledger.SetAfter((&liveTimers{}).after)
			w.pl.Unreserve(w.ctx, w.admitStandalone(a, "n0"), a, "n0")
			tc.event(w.pl.ledger.DoubtEvents(), a)
			if blocked := w.pl.ledger.DoubtBlocks("n0", b.UID, time.Now()); blocked == tc.ends {
				t.Fatalf("n0 in doubt after the event: %v, want %v", blocked, !tc.ends)
			}
		})
	}
}

// admitStandalone runs PreFilter and Permit for a standalone pod on node and returns its cycle
// state: Permit admitted it, so a failure after this puts the node in doubt.
func (w *world) admitStandalone(p *v1.Pod, node string) fwk.CycleState {
	w.t.Helper()
	c, st := w.preFilter(p)
	if !st.IsSuccess() {
		w.t.Fatalf("PreFilter(%s) = %v", p.Name, st)
	}
	if st, _ := w.pl.Permit(w.ctx, c.cs, p, node); !st.IsSuccess() {
		w.t.Fatalf("Permit(%s) = %v", p.Name, st)
	}
	return c.cs
}
