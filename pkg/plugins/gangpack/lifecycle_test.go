package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// A forming gang whose world changes under it, at the plugin level: members Terminating,
// deleted or failed, a node deleted or relabelled, the PodGroup's minMember changed.

func bound(p *v1.Pod, node string) *v1.Pod { return assumed(p, node) }

// A whole-gang restart: every member Terminating, one replacement exists. The replacement
// must wait for the whole gang, not bind alone into the domain the old members still occupy.
func TestTerminatingMembersDoNotCountAsPlaced(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("a3", "a", 1)}
	old := []*v1.Pod{
		terminating(bound(gangMember("g-0", "g", 1), "a0")),
		terminating(bound(gangMember("g-1", "g", 1), "a1")),
		terminating(bound(gangMember("g-2", "g", 1), "a2")),
	}
	r0 := gangMember("g-r0", "g", 1)
	w := newWorld(t, nil, nodes, append(old, r0), podGroup("g", 3))
	_, st := w.preFilter(r0)
	if want := msg.Templates("ns/g", 1, 3); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(g-r0) = %v, want %q", st, want)
	}
}

// A gang that lost two of three members (Terminating) forms again: its first replacement
// waits at Permit for the second instead of binding alone.
func TestReplacementsOfTerminatingMembersFormTogether(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("a3", "a", 1), testNode("a4", "a", 1)}
	pods := []*v1.Pod{
		bound(gangMember("g-0", "g", 1), "a0"),
		terminating(bound(gangMember("g-1", "g", 1), "a1")),
		terminating(bound(gangMember("g-2", "g", 1), "a2")),
	}
	r1, r2 := gangMember("g-r1", "g", 1), gangMember("g-r2", "g", 1)
	w := newWorld(t, nil, nodes, append(pods, r1), podGroup("g", 3))
	if _, st := w.preFilter(r1); st.Code() != fwk.Unschedulable || st.Message() != msg.Templates("ns/g", 1, 2) {
		t.Fatalf("PreFilter(g-r1) with one replacement = %v, want %q", st, msg.Templates("ns/g", 1, 2))
	}
	w.addPod(r2)
	c := w.mustPin(r1)
	if !c.res.NodeNames.HasAll("a3", "a4") || c.res.NodeNames.Has("a1") {
		t.Fatalf("candidates %v, want the free nodes a3, a4 of the adopted domain", c.res.NodeNames)
	}
	if st := c.reserveOn("a3"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-r1) = %v, want Wait for g-r2", st)
	}
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

// A node of a forming gang's pinned domain is relabelled into another domain while a member
// waits on it: the next member must not complete the gang in the old domain.
func TestRelabelledNodeOfWaitingMemberUnwinds(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1), testNode("b2", "b", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if pin := plan.ReadPin(c.cs); pin.Domain != "a" {
		t.Fatalf("pinned %s, want a (best fit)", pin.Domain)
	}
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	waiter := w.h.register(m0)
	nodes[0].Labels[testKey] = "b"
	w.resnap(assumed(m0, "a0"))
	_, st := w.preFilter(m1)
	if want := msg.StaleReleased("a", "ns/g"); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(g-1) = %v, want %q", st, want)
	}
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("g-0 verdict %q, want rejection", got)
	}
	if _, pinned := w.pl.ledger.Commitment("ns/g"); pinned {
		t.Fatal("the stale pin survived")
	}
}

// A waiter's node relabelled after the completing member's snapshot was taken: PreFilter
// still sees the old domain, but Permit asks the node informer and refuses to admit the gang
// across domains; the waiter is rejected and the pin dropped, so the gang plans again.
func TestRelabelAfterSnapshotStopsTheCompletingMember(t *testing.T) {
	for _, tc := range []struct {
		name     string
		relabel  string // the node relabelled after g-1's PreFilter ("" = none)
		admitted bool
	}{
		{"no relabel", "", true},
		{"the waiter's node", "a0", false},
		{"the completing member's node", "a1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1), testNode("b2", "b", 1)}
			m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
			w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
			idx := w.useNodeLister()
			if st := w.mustPin(m0).reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(g-0) = %v, want Wait", st)
			}
			waiter := w.h.register(m0)
			w.resnap(assumed(m0, "a0"))
			c := w.mustPin(m1)
			if tc.relabel != "" {
				moved := nodes[slices.IndexFunc(nodes, func(n *v1.Node) bool { return n.Name == tc.relabel })].DeepCopy()
				moved.Labels[testKey] = "b"
				if err := idx.Update(moved); err != nil {
					t.Fatal(err)
				}
			}
			st := c.reserveOn("a1")
			if tc.admitted {
				if !st.IsSuccess() || waiter.await(testWait) != "allowed" {
					t.Fatalf("Permit(g-1) = %v, waiter %q; want both admitted", st, waiter.now())
				}
				return
			}
			if want := msg.NodeLeftDomain(tc.relabel, "ns/g"); st.Code() != fwk.Unschedulable || st.Message() != want {
				t.Fatalf("Permit(g-1) = %v, want %q", st, want)
			}
			if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
				t.Fatalf("g-0 verdict %q, want rejection %q", got, msg.Unwound("ns/g"))
			}
			if _, pinned := w.pl.ledger.Commitment("ns/g"); pinned {
				t.Fatal("the pin survived a completing member that refused the gang")
			}
		})
	}
}

// waitingGangOf3 is a gang of three members in one domain of three nodes whose first member
// waits at Permit (registered) under a PodGroup of minMember.
func waitingGangOf3(t *testing.T, minMember int32) (*world, *fakeWaiter, *schedv1alpha1.PodGroup) {
	t.Helper()
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	m0, m1, m2 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1), gangMember("g-2", "g", 1)
	pg := podGroup("g", minMember)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, m2}, pg)
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.resnap(assumed(m0, "a0"))
	return w, w.h.register(m0), pg
}

// A forming gang whose minMember grows is unwound: its waiters were planned for the old size.
func TestMinMemberChangeUnwindsFormingGang(t *testing.T) {
	w, waiter, old := waitingGangOf3(t, 2)
	grown := old.DeepCopy()
	grown.Spec.MinMember = 3
	if err := w.pgs.Update(grown); err != nil {
		t.Fatal(err)
	}
	// PreFilter of another member notices first (the PodGroup event may come later).
	_, st := w.preFilter(w.pods[1])
	if want := msg.MinMemberReleased("ns/g"); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(g-1) = %v, want %q", st, want)
	}
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("g-0 verdict %q, want rejection", got)
	}
}

// The PodGroup event alone unwinds a forming gang whose minMember shrank: no member would run
// PreFilter again, and the waiters would wait out their timeout.
func TestMinMemberEventUnwindsFormingGang(t *testing.T) {
	w, waiter, old := waitingGangOf3(t, 3)
	shrunk := old.DeepCopy()
	shrunk.Spec.MinMember = 1
	w.pl.ledger.OnPodGroupChange(old, shrunk)
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("g-0 verdict %q, want rejection", got)
	}
}
