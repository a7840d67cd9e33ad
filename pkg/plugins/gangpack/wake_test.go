package gangpack

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Wake-ups at the plugin level: the pods parked behind reservations, the gang's members when
// its own state changes (Permit, an expiry, a member's event), and a bind doubt's end.

// activationRecorder is a framework handle that records Activate calls.
type activationRecorder struct {
	fwk.Handle
	calls []map[string]*v1.Pod
}

func (r *activationRecorder) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	r.calls = append(r.calls, pods)
}

func pod(ns, name, group string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: map[string]string{}}}
	if group != "" {
		p.Labels[PodGroupLabel] = group
	}
	return p
}

func keys(m map[string]*v1.Pod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A drain wakes every standalone pod and one member per gang; the other members stay blocked.
func TestWakeBlockedOneMemberPerGang(t *testing.T) {
	pods := []*v1.Pod{
		pod("ns", "solo-a", ""), pod("ns", "solo-b", ""),
		pod("ns", "g1-1", "g1"), pod("ns", "g1-0", "g1"), pod("ns", "g1-2", "g1"),
		pod("ns", "g2-0", "g2"), pod("other", "g1-0", "g1"),
	}
	w := newWorld(t, nil, nil, pods)
	rec := &activationRecorder{Handle: w.h}
	pl, err := newPlugin(w.ctx, testArgs(), rec, w.pl.members, nil, w.ledgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	pl.ledger.StartCycle()
	for _, p := range pods {
		pl.ledger.ParkBlocked(klog.Background(), p, pl.ledger.Generation())
	}
	w.protectionEnds(pl.ledger)
	if len(rec.calls) != 1 {
		t.Fatalf("%d activation calls, want 1", len(rec.calls))
	}
	got := rec.calls[0]
	for _, k := range []string{"ns/solo-a", "ns/solo-b", "ns/g1-0", "ns/g2-0", "other/g1-0"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not activated (got %v)", k, keys(got))
		}
	}
	if len(got) != 5 {
		t.Fatalf("activated %v, want exactly 5 pods", keys(got))
	}
	left := pl.ledger.Stats().Blocked
	if len(left) != 2 || left["ns/g1-1"] == nil || left["ns/g1-2"] == nil {
		t.Fatalf("still blocked %v, want ns/g1-1 and ns/g1-2", keys(left))
	}
	// The next drain wakes the next member of g1.
	w.protectionEnds(pl.ledger)
	if _, ok := rec.calls[1]["ns/g1-1"]; !ok || len(rec.calls[1]) != 1 {
		t.Fatalf("second wake activated %v, want ns/g1-1", keys(rec.calls[1]))
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
	if len(w.pl.ledger.Stats().Blocked) != 0 {
		t.Fatalf("blocked set %v, want empty after the wake-up", keys(w.pl.ledger.Stats().Blocked))
	}
}

// A wake-up does not pick a deleted member as its gang's representative.
func TestWakeBlockedSkipsDeletedRepresentative(t *testing.T) {
	g0, g1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nil, []*v1.Pod{g1}, podGroup("g", 2)) // g-0 is gone from the informer
	w.pl.ledger.ParkBlocked(klog.Background(), g0, w.pl.ledger.Generation())
	w.pl.ledger.ParkBlocked(klog.Background(), g1, w.pl.ledger.Generation())
	w.protectionEnds(w.pl.ledger)
	if !containsKey(w.h.activated, "ns/g-1") {
		t.Fatalf("activated %v, want ns/g-1", w.h.activated)
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

func wasActivated(w *world, key string) bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return slices.Contains(w.h.activated, key)
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

// A bind doubt that times out with no event about its pod wakes the pods it refused.
func TestDoubtTimeoutWakesBlockedPods(t *testing.T) {
	nodes := []*v1.Node{testNode("n0", "", 1)}
	a, b := standalone("a"), standalone("b")
	w := newWorld(t, nil, nodes, []*v1.Pod{a, b})
	lt := &liveTimers{}
	w.after = lt.after
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

// A gang of N through Permit activates O(N) pods in total: the first Permit of the attempt
// wakes the members not yet reserved, every Permit wakes its own pod, and no Permit wakes a
// sibling already reserved or waiting (kube-scheduler keeps an event for each such in-flight
// pod until the oldest in-flight pod is done).
func TestPermitWakesGangOncePerAttempt(t *testing.T) {
	const n = 8
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range n {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
		pods = append(pods, gangMember(fmt.Sprintf("g-%d", i), "g", 1))
	}
	w := newWorld(t, nil, nodes, pods, podGroup("g", n))
	used, placed := map[string]bool{}, []*v1.Pod{}
	reserved := map[string]bool{}
	for i, p := range pods {
		before := len(w.h.activated)
		_, st := w.scheduleOne(p, used, &placed)
		if want := fwk.Wait; i == n-1 {
			if !st.IsSuccess() {
				t.Fatalf("Permit(%s) = %v, want the gang admitted", p.Name, st)
			}
		} else if st.Code() != want {
			t.Fatalf("Permit(%s) = %v, want Wait", p.Name, st)
		}
		for _, k := range w.h.activated[before:] {
			if reserved[k] {
				t.Errorf("Permit(%s) woke %s, already reserved", p.Name, k)
			}
		}
		reserved["ns/"+p.Name] = true
		w.h.register(p)
	}
	if got := len(w.h.activated); got > 2*n {
		t.Fatalf("%d activations for a gang of %d, want at most %d", got, n, 2*n)
	}
}

// A member parked behind an unplaced sibling (sibling-affinity wait) after the attempt's
// first Permit is woken by that sibling's Permit.
func TestPermitWakesSiblingWaiter(t *testing.T) {
	a, s, wk := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1), gangMember("g-2", "g", 1)
	s.Labels["app"] = "s"
	wk.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}}, TopologyKey: testKey}}}}
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	w := newWorld(t, nil, nodes, []*v1.Pod{a, s, wk}, podGroup("g", 3))
	used, placed := map[string]bool{}, []*v1.Pod{}
	if _, st := w.scheduleOne(a, used, &placed); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	if _, st := w.preFilter(wk); st.Message() != msg.SiblingWait("ns", "g-1") {
		t.Fatalf("PreFilter(g-2) = %v, want the sibling wait", st)
	}
	w.h.activated = nil
	if _, st := w.scheduleOne(s, used, &placed); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-1) = %v, want Wait", st)
	}
	if !slices.Contains(w.h.activated, "ns/g-2") {
		t.Fatalf("Permit(g-1) activated %v, want the waiting g-2", w.h.activated)
	}
}

// A member created with a scheduling gate never runs PreFilter, and kube-scheduler runs no
// queueing hint for an unassigned pod's creation: the pod informer's event itself wakes the
// recordPending member of the gang it completes, which then reserves and waits at Permit.
func TestGatedMemberWakesIncompleteGang(t *testing.T) {
	cases := []struct {
		name      string
		minMember int32
		parkFirst bool // member 1 parked with the templates message first
		want      bool
	}{
		{"the gated member completes the gang", 2, true, true},
		{"still fewer live members than minMember", 3, true, false},
		{"the gang was never found incomplete", 2, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m1 := gangMember("x-1", "x", 1)
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, []*v1.Pod{m1}, podGroup("x", tc.minMember))
			if tc.parkFirst {
				if _, st := w.preFilter(m1); !strings.Contains(st.Message(), "waiting for all PodGroup member templates for ns/x: 1 of") {
					t.Fatalf("PreFilter(x-1) = %v, want the templates wait", st)
				}
			}
			m2 := gangMember("x-2", "x", 1)
			m2.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/later"}}
			w.addPod(m2)
			w.pl.memberEvent(nil, m2)
			if got := slices.Contains(w.h.activated, "ns/x-1"); got != tc.want {
				t.Fatalf("x-1 activated = %v (activated %v), want %v", got, w.h.activated, tc.want)
			}
			if !tc.want {
				return
			}
			if st := w.mustPin(m1).reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(x-1) = %v, want Wait", st)
			}
		})
	}
}

// spreadLeader is a member with a DoNotSchedule spread constraint (the gang's spread anchor).
func spreadLeader(name, group string) *v1.Pod {
	p := gangMember(name, group, 1)
	p.Labels["role"] = "leader"
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
		WhenUnsatisfiable: v1.DoNotSchedule}}
	return p
}

// A member parked behind its unscheduled spread anchor is woken when the anchor is deleted or
// relabelled (kube-scheduler re-evaluates only the changed pod itself), not when the anchor's
// status changes or its binding adds the placement labels.
func TestAwaitedSiblingChangeWakesWaiter(t *testing.T) {
	relabelled := func(p *v1.Pod) *v1.Pod {
		q := p.DeepCopy()
		q.Labels["role"] = "other"
		return q
	}
	statusOnly := func(p *v1.Pod) *v1.Pod {
		q := p.DeepCopy()
		q.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		return q
	}
	// boundWith is the update of the anchor's binding: spec.nodeName set and the Binding's
	// labels (and the admission plugin's) added.
	boundWith := func(change func(*v1.Pod) *v1.Pod) func(*v1.Pod) *v1.Pod {
		return func(p *v1.Pod) *v1.Pod {
			q := change(p)
			q.Spec.NodeName = "a0"
			q.Labels[DomainLabel], q.Labels["topology.kubernetes.io/zone"] = "a", "z1"
			return q
		}
	}
	cases := []struct {
		name   string
		change func(*v1.Pod) *v1.Pod // nil: deleted
		want   bool
	}{
		{"anchor deleted", nil, true},
		{"anchor relabelled", relabelled, true},
		{"anchor status updated", statusOnly, false},
		{"anchor bound with placement labels", boundWith((*v1.Pod).DeepCopy), false},
		{"anchor bound and relabelled", boundWith(relabelled), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leader, worker := spreadLeader("g-0", "g"), gangMember("g-1", "g", 1)
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, []*v1.Pod{leader, worker}, podGroup("g", 2))
			if _, st := w.preFilter(worker); !strings.Contains(st.Message(), "waiting for gang spread anchor ns/g-0") {
				t.Fatalf("PreFilter(worker) = %v, want the anchor wait", st)
			}
			var cur *v1.Pod
			if tc.change != nil {
				cur = tc.change(leader)
			}
			w.pl.memberEvent(leader, cur)
			if got := slices.Contains(w.h.activated, "ns/g-1"); got != tc.want {
				t.Fatalf("worker activated = %v (activated %v), want %v", got, w.h.activated, tc.want)
			}
		})
	}
}

// protectionEnds wakes the reservation-blocked pods as the end of a standalone preemptor's
// protection does (its timer fires).
func (w *world) protectionEnds(l *ledger.Ledger) {
	w.t.Helper()
	var fire []func()
	prev := w.after
	w.after = func(_ time.Duration, f func()) func() { fire = append(fire, f); return func() {} }
	l.WakeBlockedAfter("protected-preemptor", time.Second)
	w.after = prev
	if len(fire) != 1 {
		w.t.Fatalf("%d protection timers, want 1", len(fire))
	}
	fire[0]()
}
