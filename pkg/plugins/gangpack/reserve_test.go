package gangpack

import (
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Reserve and Unreserve at the plugin level: the drain of forming gangs' reservations, the
// unwind, and the binding in doubt after a failed bind.

// scheduleOne runs one member's cycle on the first candidate no pod of the world uses yet
// and assumes it there; it returns the node and Permit's status.
func (w *world) scheduleOne(p *v1.Pod, used map[string]bool, assumedSoFar *[]*v1.Pod) (string, *fwk.Status) {
	w.t.Helper()
	c := w.mustPin(p)
	cands := c.res.NodeNames.UnsortedList()
	sort.Strings(cands)
	for _, n := range cands {
		if used[n] {
			continue
		}
		st := c.reserveOn(n)
		used[n] = true
		*assumedSoFar = append(*assumedSoFar, assumed(p, n))
		w.resnap(*assumedSoFar...)
		return n, st
	}
	w.t.Fatalf("no free candidate for %s in %v", p.Name, cands)
	return "", nil
}

// Two gangs of 4 one-GPU members into one clique of 8 one-GPU nodes, their members
// interleaved: both form at once, in disjoint room, and both are admitted.
func TestTwoGangsFormConcurrentlyInOneDomain(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 8; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
	}
	var xs, ys, pods []*v1.Pod
	for i := 0; i < 4; i++ {
		xs = append(xs, gangMember(fmt.Sprintf("x-%d", i), "x", 1))
		ys = append(ys, gangMember(fmt.Sprintf("y-%d", i), "y", 1))
	}
	pods = append(append(pods, xs...), ys...)
	w := newWorld(t, nil, nodes, pods, podGroup("x", 4), podGroup("y", 4))
	used := map[string]bool{}
	var placed []*v1.Pod
	byGang := map[string]map[string]bool{"x": {}, "y": {}}
	for i := 0; i < 4; i++ {
		for _, p := range []*v1.Pod{xs[i], ys[i]} {
			node, st := w.scheduleOne(p, used, &placed)
			byGang[p.Labels[PodGroupLabel]][node] = true
			want := fwk.Wait
			if i == 3 {
				want = fwk.Success
			}
			if st.Code() != want {
				t.Fatalf("Permit(%s on %s) = %v, want %v", p.Name, node, st, want)
			}
		}
		if i == 0 {
			x, _ := w.pl.ledger.Commitment("ns/x")
			y, _ := w.pl.ledger.Commitment("ns/y")
			if x.Domain != "a" || y.Domain != "a" || x.Reserved.Members() != 3 || y.Reserved.Members() != 3 {
				t.Fatalf("after one member each: x %+v, y %+v; want both forming in a with 3 members reserved", x, y)
			}
			for n := range x.Reserved {
				if _, ok := y.Reserved[n]; ok {
					t.Fatalf("x and y both reserve node %s", n)
				}
			}
		}
	}
	if len(byGang["x"]) != 4 || len(byGang["y"]) != 4 || len(used) != 8 {
		t.Fatalf("placements x=%v y=%v, want 4 distinct nodes each", byGang["x"], byGang["y"])
	}
}

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

// A pod whose binding failed after Permit admitted it may be bound anyway (the API server got
// the request, the scheduler saw an error): its node is kept from other pods until the pod
// informer reports the pod again.
func TestBindErrorPutsNodeInDoubt(t *testing.T) {
	nodes := []*v1.Node{testNode("n0", "", 1)}
	a, b := standalone("a"), standalone("b")
	w := newWorld(t, nil, nodes, []*v1.Pod{a, b})
	cs := framework.NewCycleState()
	if st, _ := w.pl.Permit(w.ctx, cs, a, "n0"); !st.IsSuccess() {
		t.Fatalf("Permit(a) = %v", st)
	}
	w.pl.Unreserve(w.ctx, cs, a, "n0") // the bind failed
	ni, _ := w.h.snapshot.NodeInfos().Get("n0")
	if st := w.pl.Filter(w.ctx, framework.NewCycleState(), b, ni); st.Code() != fwk.Unschedulable || st.Message() != msg.BindInDoubt {
		t.Fatalf("Filter(b on n0) = %v, want %q", st, msg.BindInDoubt)
	}
	if st := w.pl.Filter(w.ctx, framework.NewCycleState(), a, ni); !st.IsSuccess() {
		t.Fatalf("Filter(a on its own node) = %v, want success", st)
	}
	w.doubtEvents().OnUpdate(a, bound(a, "n0")) // the informer reports a bound
	if st := w.pl.Filter(w.ctx, framework.NewCycleState(), b, ni); !st.IsSuccess() {
		t.Fatalf("Filter(b on n0) after the informer reported a = %v, want success", st)
	}
	// A failure before admission (a Permit rejection, a timeout) leaves no doubt.
	w.pl.Unreserve(w.ctx, framework.NewCycleState(), b, "n0")
	if w.pl.ledger.DoubtBlocks("n0", a.UID, time.Now()) {
		t.Fatal("an Unreserve without admission put the node in doubt")
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
			w.after = (&liveTimers{}).after
			w.pl.Unreserve(w.ctx, w.admitStandalone(a, "n0"), a, "n0")
			tc.event(w.doubtEvents(), a)
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

// doubtEvents are the pod event handlers the ledger registers to end bindings in doubt.
func (w *world) doubtEvents() cache.ResourceEventHandler {
	w.t.Helper()
	capture := &captureInformer{SharedIndexInformer: w.podInf}
	if err := w.pl.ledger.WatchDoubts(capture); err != nil || len(capture.handlers) != 1 {
		w.t.Fatalf("WatchDoubts registered %d handlers (%v), want 1", len(capture.handlers), err)
	}
	return capture.handlers[0]
}
