package gangpack

import (
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A gang refused because a standalone preemptor's nominated node is protected parks as
// reservation-blocked, and no hold of the store lifts when the protection ends. The
// preemptor's binding requeues the gang (the assigned-pod hint: one member per gang, not a
// standalone pod, not for another pod's binding); when the protection ends otherwise (the
// preemptor deleted while pending), a timer at the protection's bound wakes the blocked pods.
func TestProtectionEndRequeuesRefusedGang(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	v := placedOn(prio(standalone("v"), 1), "a1")
	other := placedOn(prio(standalone("other"), 1), "a2")
	solo := prio(standalone("solo"), 10)
	g0, g1 := prio(gangMember("g-0", "g", 1), 1), prio(gangMember("g-1", "g", 1), 1)
	pend := prio(standalone("pend"), 1)
	w := newPreemptWorld(t, nodes, []*v1.Pod{v, other, solo, g0, g1, pend}, podGroup("g", 1))
	now := time.Unix(2_000_000, 0)
	type timer struct {
		at time.Time
		f  func()
	}
	var timers []timer
	w.now = func() time.Time { return now }
	w.after = func(d time.Duration, f func()) func() {
		timers = append(timers, timer{now.Add(d), f})
		return func() {}
	}
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if !st.IsSuccess() || res == nil || res.NominatingInfo.NominatedNodeName != "a1" {
		t.Fatalf("PostFilter(solo) = %+v, %v; want a1 nominated", res, st)
	}
	w.awaitRemaining("g-0", "g-1", "other", "pend", "solo")
	w.gone(v)
	if _, st := w.preFilter(g0); st.IsSuccess() {
		t.Fatal("PreFilter(g-0) succeeded; want the gang refused while a1 is protected")
	}
	if _, blocked := w.pl.ledger.Stats().Blocked[testNS+"/g-0"]; !blocked {
		t.Fatalf("g-0 not parked as reservation-blocked: %v", w.pl.ledger.Stats().Blocked)
	}

	hint := podHint(false, w.pl.protectionEnded)
	queued := func(added *v1.Pod) []string {
		var out []string
		for _, p := range []*v1.Pod{g0, g1, pend} {
			if h, err := hint(klog.Background(), p, nil, added); err != nil || h == fwk.Queue {
				out = append(out, p.Name)
			}
		}
		return out
	}
	if got := queued(placedOn(prio(standalone("late"), 1), "a2")); len(got) != 0 {
		t.Fatalf("another pod's binding queued %v, want nobody", got)
	}
	if got := queued(placedOn(solo.DeepCopy(), "a1")); !slices.Equal(got, []string{"g-0"}) {
		t.Fatalf("the preemptor's binding queued %v, want [g-0]", got)
	}

	// The preemptor is deleted while pending: its protection ends, and the timer armed at
	// its bound wakes the blocked gang.
	w.gone(solo)
	if len(timers) == 0 {
		t.Fatal("no timer armed for the end of the protection")
	}
	sort.Slice(timers, func(i, j int) bool { return timers[i].at.Before(timers[j].at) })
	w.h.mu.Lock()
	w.h.activated = nil
	w.h.mu.Unlock()
	for _, tm := range timers {
		now = tm.at
		tm.f()
	}
	w.h.mu.Lock()
	activated := slices.Clone(w.h.activated)
	w.h.mu.Unlock()
	if !slices.Contains(activated, testNS+"/g-0") {
		t.Fatalf("timers at the protection's bound activated %v, want %s/g-0", activated, testNS)
	}
}
