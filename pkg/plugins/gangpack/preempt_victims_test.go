package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Which pods a preemption evicts, or why none: the fewest, of lower priority than every
// live member of the gang, in one domain, steered by PodDisruptionBudgets.

// A clique with one free node and one low standalone pod beats a clique holding a two-member
// gang: one victim, not two (E2).
func TestPreemptFewestVictims(t *testing.T) {
	pods := append(gangOn("low", 1, "b1", "b2"), placedOn(prio(standalone("solo"), 1), "a2"))
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("hi", 2))
	beforePods := victimCounter(t, metrics.UnitPod)
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "low-0", "low-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if d := victimCounter(t, metrics.UnitPod) - beforePods; d != 1 {
		t.Fatalf("victims{pod} grew by %v, want 1", d)
	}
}

// Equal priority (or higher) pods are never victims: nothing is evicted and the reason says so
// (E3); preemptionPolicy Never evicts nothing either (E4).
func TestPreemptNoVictimReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		never  bool
		lowPri int32
		want   string
	}{
		{"equal priority", false, 10, "; preemption: no lower-priority pods to evict"},
		{"higher priority", false, 11, "; preemption: no lower-priority pods to evict"},
		{"never", true, 1, "; preemption: preemptionPolicy is Never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := append(gangOn("low", tc.lowPri, "a1", "a2"), gangOn("other", tc.lowPri, "b1", "b2")...)
			hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
			if tc.never {
				hi[0].Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
			}
			w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("other", 2), podGroup("hi", 2))
			before := counter(t, metrics.PreemptorGang, metrics.PreemptResultNoCandidate)
			res, st := w.postFilter(hi[0])
			if st.Code() != fwk.Unschedulable || st.Message() != tc.want || !clears(res) {
				t.Fatalf("PostFilter = %v, %v; want Unschedulable %q", res, st, tc.want)
			}
			if len(w.remaining()) != 6 || len(w.eventNotes()) != 0 {
				t.Fatalf("something was evicted: %v", w.remaining())
			}
			if _, pinned := w.pl.ledger.Commitment(testNS + "/hi"); pinned {
				t.Fatal("gang pinned without a preemption")
			}
			if d := counter(t, metrics.PreemptorGang, metrics.PreemptResultNoCandidate) - before; d != 1 {
				t.Fatalf("no_candidate grew by %v, want 1", d)
			}
		})
	}
}

// A gang preempts with the lowest priority among its live members: the member being
// scheduled has priority 10, its sibling 1, so pods of priority 5 are no victims.
func TestPreemptMixedPriorityGang(t *testing.T) {
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 1)}
	pods := append(append(gangOn("low", 5, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	if !clears(res) {
		t.Fatalf("PostFilter = %+v, %v; want no nomination", res, st)
	}
	wantWait(t, st, "; preemption: no lower-priority pods to evict")
	if len(w.remaining()) != 6 {
		t.Fatalf("evicted: %v", w.remaining())
	}
}

// Room that exists only across two cliques is never bought with evictions (E7).
func TestPreemptOneDomainOnly(t *testing.T) {
	pods := []*v1.Pod{placedOn(prio(standalone("s-a"), 1), "a2"), placedOn(prio(standalone("s-b"), 1), "b2")}
	var hi []*v1.Pod
	for i := 0; i < 3; i++ {
		hi = append(hi, prio(gangMember("hi-"+string(rune('0'+i)), "hi", 1), 10))
	}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("hi", 3))
	res, st := w.postFilter(hi[0])
	want := "; preemption: evicting lower-priority pods would not free one domain for 3 members"
	if st.Code() != fwk.Unschedulable || st.Message() != want || !clears(res) {
		t.Fatalf("PostFilter = %v, %v; want %q", res, st, want)
	}
	if len(w.remaining()) != 5 {
		t.Fatalf("something was evicted: %v", w.remaining())
	}
}

// A PodDisruptionBudget protecting one gang steers the choice to an unprotected one, even
// when the protected one would otherwise win (E6).
func TestPreemptPDBRanking(t *testing.T) {
	pods := append(gangOn("prot", 1, "a1", "a2"), gangOn("free", 2, "b1", "b2")...)
	for _, p := range pods[:2] {
		p.Labels["app"] = "prot"
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("prot", 2), podGroup("free", 2), podGroup("hi", 2))
	one := intstr.FromInt32(2)
	if err := w.pdbs.Add(&policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "prot"},
		Spec:       policy.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prot"}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}); err != nil {
		t.Fatal(err)
	}
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "prot-0", "prot-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}
