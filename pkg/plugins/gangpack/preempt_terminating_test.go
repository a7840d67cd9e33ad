package gangpack

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Preemption while pods terminate: a gang waits for the room its victims, or its own
// Terminating members, give back instead of evicting again.

// preemptedBy is a copy of p being deleted by a preemption: the DisruptionTarget condition
// the scheduler sets, and a deletionTimestamp the API server set to the deletion plus grace.
func preemptedBy(p *v1.Pod, deadline time.Time) *v1.Pod {
	q := p.DeepCopy()
	q.Status.Conditions = append(q.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler})
	return deletingUntil(q, deadline)
}

// deletingUntil is a copy of p deleted gracefully: the API server's deletionTimestamp is when
// its grace period ends.
func deletingUntil(p *v1.Pod, deadline time.Time) *v1.Pod {
	q := p.DeepCopy()
	ts := metav1.NewTime(deadline)
	q.DeletionTimestamp = &ts
	q.DeletionGracePeriodSeconds = ptr.To[int64](60)
	return q
}

// hiPreemptedLow is the world of a low gang on a1, a2 and a mid gang on b1, b2, where hi-0
// of a two-member high-priority gang has just evicted the low gang. It returns the low
// gang's pods (the victims) and the hi members.
func hiPreemptedLow(t *testing.T) (w *preemptWorld, victims, hi []*v1.Pod) {
	t.Helper()
	pods := append(gangOn("low", 1, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...)
	hi = []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w = newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	return w, pods[:2], hi
}

// While the victims terminate the gang keeps its pin and does not preempt again; once they
// are gone the pin stands and the members are placed in the domain (docs/design.md §19, item 8).
func TestPreemptNoStormWhileVictimsTerminate(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	// The informer still shows the victims, Terminating.
	for _, p := range victims {
		w.updatePod(terminating(p))
	}
	w.resnap()
	before := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted)
	events := len(w.eventNotes())
	res, st := w.postFilter(hi[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "; preemption: waiting for 2 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter while victims terminate = %v", st)
	}
	if res == nil || res.NominatingInfo == nil || res.NominatingInfo.NominatedNodeName == "" {
		t.Fatalf("waiting member not nominated: %+v", res)
	}
	if counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted) != before || len(w.eventNotes()) != events {
		t.Fatal("preempted again while victims terminate")
	}
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("pin dropped while victims terminate: %+v %v", c, ok)
	}
	// The victims are gone: the pinned domain has room and the member goes there.
	w.pods = slices.DeleteFunc(w.pods, func(p *v1.Pod) bool { return strings.HasPrefix(p.Name, "low-") })
	for _, p := range victims {
		_ = w.podInf.GetIndexer().Delete(p)
	}
	w.resnap()
	c := w.mustPin(hi[1])
	if got := candidateNames(c.res); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("candidates %v, want a1 a2", got)
	}
}

// The informer learns that the victims are gone before the scheduling snapshot does. A
// cycle on the older snapshot still sees the domain full: the gang keeps its pin and waits,
// and does not take the missing room for a reason to preempt the other gang.
func TestPreemptWaitsUntilSnapshotDropsVictims(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	for _, p := range victims { // gone from the informer; the snapshot is not rebuilt
		_ = w.podInf.GetIndexer().Delete(p)
	}
	before := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted)
	_, st := w.postFilter(hi[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "; preemption: waiting for 2 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter on a snapshot that still holds the victims = %v", st)
	}
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted) != before {
		t.Fatal("preempted again before the snapshot dropped the victims")
	}
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("pin = %+v %v, want a", c, ok)
	}
}

func candidateNames(r *fwk.PreFilterResult) []string {
	if r == nil {
		return nil
	}
	out := r.NodeNames.UnsortedList()
	sort.Strings(out)
	return out
}

// The record of the victims outlives the preemptor's timeout while they still terminate: past
// the timeout (its hold ended, the domain rests) the gang waits and evicts no second domain.
func TestPreemptRecordOutlivesTheTimeout(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	w.awaitRemaining("hi-0", "hi-1", "mid-0", "mid-1")
	for _, p := range victims { // a long grace period: still Terminating long after the timeout
		w.updatePod(preemptedBy(p, time.Now().Add(time.Hour)))
	}
	w.resnap()
	later := time.Now().Add(601 * time.Second) // hi's scheduleTimeoutSeconds is 600
	w.now = func() time.Time { return later }
	_, st := w.postFilter(hi[1])
	wantWait(t, st, "; preemption: waiting for 2 preempted pods to terminate in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// After a leader change the new plugin has no record of the preemption, but the victims still
// terminate in domain a: the gang waits for their room and evicts no second domain.
func TestPreemptAfterLeaderChangeWaitsForVictims(t *testing.T) {
	until := time.Now().Add(time.Hour)
	victims := gangOn("low", 1, "a1", "a2")
	for i, p := range victims {
		victims[i] = preemptedBy(p, until)
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(victims, gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	_, st := w.postFilter(hi[0])
	wantWait(t, st, "; preemption: waiting for 2 terminating pods to give back room in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "low-0", "low-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// A gang restarting in place (its old members Terminating in domain a, replacements pending)
// waits for the room its own old members give back; it does not evict the lower-priority
// gang in domain b.
func TestPreemptRestartWaitsForOwnTerminatingMembers(t *testing.T) {
	until := time.Now().Add(60 * time.Second)
	old := []*v1.Pod{
		deletingUntil(placedOn(prio(gangMember("hi-old-0", "hi", 1), 10), "a1"), until),
		deletingUntil(placedOn(prio(gangMember("hi-old-1", "hi", 1), 10), "a2"), until),
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(old, gangOn("low", 1, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("hi", 2))
	_, st := w.postFilter(hi[0])
	wantWait(t, st, "; preemption: waiting for 2 terminating pods to give back room in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "hi-old-0", "hi-old-1", "low-0", "low-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// A pod stuck Terminating well past its deletionTimestamp (an unreachable node) does not
// block preemption forever: its room no longer counts as coming back.
func TestPreemptStuckTerminatingDoesNotBlock(t *testing.T) {
	victims := gangOn("low", 1, "a1", "a2")
	for i, p := range victims {
		victims[i] = preemptedBy(p, time.Now().Add(-10*time.Minute))
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(victims, gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	w.awaitRemaining("hi-0", "hi-1", "low-0", "low-1")
}

// A victim whose eviction call succeeded is not evicted again while the pod informer has not
// yet delivered its deletion: the next member's PostFilter waits on it, and each victim gets
// one Preempted event.
func TestPreemptEvictsEachVictimOnce(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	w.settle() // the eviction calls are done; the informer still shows the victims bound
	w.resnap()
	if _, st := w.postFilter(hi[1]); st.Code() != fwk.Unschedulable || st.Message() != "; preemption: waiting for 2 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter(hi-1) = %v, want a wait on the victims", st)
	}
	w.settle()
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	count := map[string]int{}
	for _, e := range w.h.events {
		if e.reason == "Preempted" {
			count[e.regarding]++
		}
	}
	for _, v := range victims {
		if n := count[testNS+"/"+v.Name]; n != 1 {
			t.Errorf("%s got %d Preempted events, want 1", v.Name, n)
		}
	}
}
