package gangpack

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Real-cluster conditions, at the plugin level: graceful deletion, framework races, relabels.

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

// An unwind between Permit returning Wait and the framework registering the waiter cannot
// see the waiter; the late waiter of the dead attempt must still be rejected at once, not
// wait out its timeout while its siblings re-plan without it.
func TestLateWaiterOfDeadAttemptIsRejected(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	// A sibling's Unreserve unwinds the attempt before the framework registered g-0.
	pin := plan.ReadPin(c.cs)
	if res := w.pl.ledger.Unwind(klog.Background(), "ns/g", pin.ID, gang.CauseUnreserve, false); !res.Released || res.Rejected != 0 {
		t.Fatalf("unwind = %+v, want a release that found no registered waiter", res)
	}
	waiter := w.h.register(m0)
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("late waiter verdict %q, want rejection %q", got, msg.Unwound("ns/g"))
	}
}

// A live waiter of a live attempt is left alone by the supervision.
func TestWaiterOfLiveAttemptKeepsWaiting(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	waiter := w.h.register(m0)
	if got := waiter.await(200 * time.Millisecond); got != "" {
		t.Fatalf("waiter of a live attempt got verdict %q", got)
	}
	w.resnap(assumed(m0, "a0"))
	c1 := w.mustPin(m1)
	if st := c1.reserveOn("a1"); !st.IsSuccess() {
		t.Fatalf("Permit(g-1) = %v, want the admission", st)
	}
	if got := waiter.await(testWait); got != "allowed" {
		t.Fatalf("g-0 verdict %q, want allowed", got)
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
	if w.pl.ledger.HeldDomains() != 1 {
		t.Fatal("PreFilter did not hold the domain")
	}
	deadline := time.Now().Add(testWait)
	for w.pl.ledger.HeldDomains() != 0 {
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

// A committed gang's surplus member may not use a node another forming gang holds.
func TestSurplusMemberRespectsAnotherGangsHold(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("a3", "a", 1)}
	x0, x1 := gangMember("x-0", "x", 1), gangMember("x-1", "x", 1)
	y0, y1 := gangMember("y-0", "y", 1), gangMember("y-1", "y", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, y0, y1}, podGroup("x", 1), podGroup("y", 2))
	if st := w.mustPin(x0).reserveOn("a0"); !st.IsSuccess() {
		t.Fatalf("Permit(x-0) = %v, want admission (gang of one)", st)
	}
	w.resnap(assumed(x0, "a0"))
	w.mustPin(y0) // y holds domain a while it forms
	w.addPod(x1)
	c := w.mustPin(x1)
	ni, _ := w.h.snapshot.NodeInfos().Get("a1")
	if st := w.pl.Filter(w.ctx, c.cs, x1, ni); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != msg.NodeReserved {
		t.Fatalf("Filter(x-1 on a1) = %v, want %q", st, msg.NodeReserved)
	}
}

// A pod parked because of a hold that was lifted between the decision and the parking is
// woken at once: the lift's wake-up found the blocked set without it.
func TestParkAfterHoldLiftWakesPod(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, solo}, podGroup("g", 2))
	c := w.mustPin(m0)
	generation := w.pl.ledger.Generation() // the Filter decision saw the hold here
	w.pl.ledger.Unwind(klog.Background(), "ns/g", plan.ReadPin(c.cs).ID, gang.CauseUnreserve, false)
	w.pl.ledger.ParkBlocked(klog.Background(), solo, generation)
	if !containsKey(w.h.activated, "ns/solo") {
		t.Fatalf("activated %v, want ns/solo", w.h.activated)
	}
	if len(w.pl.ledger.Blocked()) != 0 {
		t.Fatalf("blocked set %v, want empty after the wake-up", keys(w.pl.ledger.Blocked()))
	}
}

// A wake-up does not pick a deleted member as its gang's representative.
func TestWakeBlockedSkipsDeletedRepresentative(t *testing.T) {
	g0, g1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nil, []*v1.Pod{g1}, podGroup("g", 2)) // g-0 is gone from the informer
	w.pl.ledger.ParkBlocked(klog.Background(), g0, w.pl.ledger.Generation())
	w.pl.ledger.ParkBlocked(klog.Background(), g1, w.pl.ledger.Generation())
	w.pl.ledger.WakeBlocked(klog.Background())
	if !containsKey(w.h.activated, "ns/g-1") {
		t.Fatalf("activated %v, want ns/g-1", w.h.activated)
	}
}

// A standalone pod refused on a node held under a gang's own topology key is requeued when
// that label changes.
func TestStandaloneNodeHintSeesHeldKeys(t *testing.T) {
	const rack = "example.com/rack"
	nodes := []*v1.Node{testNode("r0", "", 1), testNode("r1", "", 1)}
	for _, n := range nodes {
		n.Labels[rack] = "r"
	}
	pg := podGroup("g", 2)
	pg.Annotations = map[string]string{"ome.io/topology-key": rack}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, solo}, pg)
	w.mustPin(m0)
	moved := nodes[0].DeepCopy()
	moved.Labels[rack] = "s"
	hint, err := w.pl.hintNodeChange(klog.Background(), solo, nodes[0], moved)
	if err != nil || hint != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", hint, err)
	}
	unrelated := nodes[0].DeepCopy()
	delete(unrelated.Labels, rack)
	unrelatedOld := unrelated.DeepCopy()
	unrelated.Labels["other"] = "x"
	if hint, _ := w.pl.hintNodeChange(klog.Background(), solo, unrelatedOld, unrelated); hint != fwk.QueueSkip {
		t.Fatalf("hint for a node without any held key = %v, want QueueSkip", hint)
	}
}

// The plugin enabled in two profiles of one scheduler is a startup error.
func TestTwoProfilesRefused(t *testing.T) {
	w := newWorld(t, nil, nil, nil)
	args := testArgsObject(t)
	if _, err := New(w.ctx, args, w.h); err != nil {
		t.Fatalf("first profile: %v", err)
	}
	_, err := New(w.ctx, args, w.h)
	if err == nil || !strings.Contains(err.Error(), "more than one scheduler profile") {
		t.Fatalf("second profile: err = %v, want the two-profiles error", err)
	}
}

func containsKey(list []string, k string) bool {
	for _, s := range list {
		if s == k {
			return true
		}
	}
	return false
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
	if _, st := w.preFilter(g1); st.Code() != fwk.Unschedulable || w.pl.ledger.HeldDomains() != 1 {
		t.Fatalf("PreFilter(g-1) = %v with %d held domains, want the adopted-short wait holding a", st, w.pl.ledger.HeldDomains())
	}
	deadline := time.Now().Add(testWait)
	for w.pl.ledger.HeldDomains() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the adopted hold outlived the gang's timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, st := w.preFilter(g1)
	if want := msg.AdoptedShort("a", "ns/g", 0, 1); st.Message() != want {
		t.Fatalf("PreFilter(g-1) after expiry = %v, want %q", st, want)
	}
	if n := w.pl.ledger.HeldDomains(); n != 0 {
		t.Fatalf("the expired gang holds %d domains again", n)
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
	if !w.pl.ledger.ResolveDoubt(a.UID) {
		t.Fatal("no doubt to resolve")
	}
	if st := w.pl.Filter(w.ctx, framework.NewCycleState(), b, ni); !st.IsSuccess() {
		t.Fatalf("Filter(b on n0) after the informer reported a = %v, want success", st)
	}
	// A failure before admission (a Permit rejection, a timeout) leaves no doubt.
	w.pl.Unreserve(w.ctx, framework.NewCycleState(), b, "n0")
	if w.pl.ledger.DoubtBlocks("n0", a.UID, time.Now()) {
		t.Fatal("an Unreserve without admission put the node in doubt")
	}
}

// A member rejected at Permit stays assumed on its node until the framework unreserves it.
// A sibling planning in that window must not count it as placed: it would adopt the domain
// for the rest of the gang and bind without it.
func TestRejectedWaiterIsNotPlaced(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	c := w.mustPin(m0)
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	waiter := w.h.register(m0)
	w.pl.ledger.Unwind(klog.Background(), "ns/g", plan.ReadPin(c.cs).ID, gang.CauseExpired, false)
	if got := waiter.await(testWait); got != msg.Unwound("ns/g") {
		t.Fatalf("g-0 verdict %q, want rejection", got)
	}
	w.resnap(assumed(m0, "a0")) // not unreserved yet
	c1 := w.mustPin(m1)
	if st := c1.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-1) = %v, want Wait for g-0 (not an admission next to a rejected member)", st)
	}
}
