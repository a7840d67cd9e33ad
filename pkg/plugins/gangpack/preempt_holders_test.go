package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Preemption and forming gangs' holds: a hold alone is no reason to preempt; a lower-priority
// holder is a victim, one of equal or higher priority keeps its domain.

// A gang whose only obstacle is another gang's hold does not preempt (docs/design.md §19, item 1).
func TestPreemptNotForHolds(t *testing.T) {
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(gangOn("low", 1, "b1", "b2"), hi...)
	other := []*v1.Pod{prio(gangMember("other-0", "other", 1), 20), prio(gangMember("other-1", "other", 1), 20)}
	w := newPreemptWorld(t, twoDomains(), append(pods, other...), podGroup("low", 2), podGroup("hi", 2), podGroup("other", 2))
	w.mustPin(other[0]) // other holds a
	res, st := w.postFilter(hi[0])
	if st.Code() != fwk.Unschedulable || st.Message() != "" || !clears(res) {
		t.Fatalf("PostFilter = %v, %v; want a plain Unschedulable", res, st)
	}
	if len(w.remaining()) != 6 {
		t.Fatal("evicted")
	}
}

// lowerHolderPreempted is the world where a low-priority gang (form) holds domain a with form-0
// waiting at Permit on a1, a mid gang sits in b, and the high gang's hi-0 preempts: form-0 is
// rejected and hi is nominated to a. It returns the world, form's and hi's members, and
// form-0's cycle.
func lowerHolderPreempted(t *testing.T) (*preemptWorld, []*v1.Pod, []*v1.Pod, *cycle) {
	t.Helper()
	form := []*v1.Pod{prio(gangMember("form-0", "form", 1), 1), prio(gangMember("form-1", "form", 1), 1)}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(append([]*v1.Pod{}, form...), gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("form", 2), podGroup("mid", 2), podGroup("hi", 2))
	// form-1 stays out of the snapshot's nodes: only form-0 is placed (waiting at Permit).
	c := w.mustPin(form[0])
	if st := c.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(form-0) = %v, want Wait", st)
	}
	waiter := w.h.register(form[0])
	w.resnap(assumed(form[0], "a1"))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	if got := waiter.await(testWait); got == "" || got == "allowed" {
		t.Fatalf("form-0 verdict %q, want a rejection", got)
	}
	return w, form, hi, c
}

// A forming lower-priority gang holding a domain is a victim like any other: its waiting
// member is rejected (not deleted), its hold is released in one unwind, and the preemptor
// pins the domain; a mid-priority gang elsewhere is untouched (docs/design.md §19, item 2).
func TestPreemptLowerPriorityHolder(t *testing.T) {
	w, _, _, _ := lowerHolderPreempted(t)
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("hi pin %+v %v, want a", c, ok)
	}
	if _, ok := w.pl.ledger.Commitment(testNS + "/form"); ok {
		t.Fatal("the holder's commitment survived")
	}
	// The waiting member is rejected, not deleted; nothing else is touched.
	if got, want := w.remaining(), []string{"form-0", "form-1", "hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if notes := w.eventNotes(); notes[testNS+"/form-0"] != "Preempted by gang "+testNS+"/hi to place it in domain a" {
		t.Fatalf("events %v", notes)
	}
}

// A victim rejected while it waited at Permit stays in the API. Once a later scheduling cycle
// of its own reserves and binds it, it is a new placement, not a victim that escaped its
// eviction: the preemptor does not wait on it or evict it again alone (it may now belong to a
// new unit, which a new preemption evicts whole).
func TestPreemptVictimPlacedAgainIsNew(t *testing.T) {
	w, form, hi, c := lowerHolderPreempted(t)
	w.pl.Unreserve(w.ctx, c.cs, form[0], "a1")
	// form-0 is scheduled again (a cycle of its own reserves it on a1) and binds.
	if st := w.pl.Reserve(w.ctx, framework.NewCycleState(), form[0], "a1"); !st.IsSuccess() {
		t.Fatalf("Reserve(form-0) = %v", st)
	}
	w.updatePod(placedOn(form[0].DeepCopy(), "a1"))
	w.resnap()
	_, st := w.postFilter(hi[1])
	if st.Code() == fwk.Unschedulable && st.Message() == "; preemption: waiting for 1 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter = %v: the preemptor waits on a pod placed again after its rejection", st)
	}
}

// A domain held by a gang of equal or higher priority is never a candidate.
func TestPreemptHigherPriorityHolderKept(t *testing.T) {
	form := []*v1.Pod{prio(gangMember("form-0", "form", 1), 10), prio(gangMember("form-1", "form", 1), 10)}
	low := gangOn("low", 5, "b1", "b2")
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(append([]*v1.Pod{}, form...), low...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("form", 2), podGroup("low", 2), podGroup("hi", 2))
	c := w.mustPin(form[0])
	if st := c.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(form-0) = %v, want Wait", st)
	}
	waiter := w.h.register(form[0])
	w.resnap(assumed(form[0], "a1"))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	if got := waiter.now(); got != "" {
		t.Fatalf("the equal-priority holder's member got verdict %q", got)
	}
	if got, want := w.remaining(), []string{"form-0", "form-1", "hi-0", "hi-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// Every forming reservation overlapping the freed domain counts, whatever its topology key:
// lower-priority holders are all released (and the preemptor holds the domain), one of equal
// or higher priority keeps the domain from being chosen.
func TestPreemptHoldersOfTheDomain(t *testing.T) {
	const rackKey = "example.com/rack"
	type holder struct {
		gang, key, domain, node string
		priority                int32
	}
	for _, tc := range []struct {
		name     string
		holders  []holder
		preempts bool
	}{
		{"two lower holders under the key", []holder{{"l1", testKey, "a", "a2", 1}, {"l2", testKey, "a", "a3", 1}}, true},
		{"lower holder under another key", []holder{{"l1", rackKey, "r1", "a2", 1}}, true},
		{"higher holder under another key", []holder{{"l1", rackKey, "r1", "a2", 20}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*v1.Node
			for i, n := range []string{"a1", "a2", "a3", "a4"} {
				node := testNode(n, "a", 1)
				node.Labels[rackKey] = "r" + string(rune('1'+i/2))
				nodes = append(nodes, node)
			}
			pods := []*v1.Pod{placedOn(prio(standalone("s1"), 1), "a1"), placedOn(prio(standalone("s4"), 1), "a4")}
			pgs := []*schedv1alpha1.PodGroup{podGroup("hi", 4)}
			for _, h := range tc.holders {
				pods = append(pods, prio(gangMember(h.gang+"-0", h.gang, 1), h.priority), prio(gangMember(h.gang+"-1", h.gang, 1), h.priority))
				pgs = append(pgs, podGroup(h.gang, 2))
			}
			var hi []*v1.Pod
			for i := 0; i < 4; i++ {
				hi = append(hi, prio(gangMember("hi-"+string(rune('0'+i)), "hi", 1), 10))
			}
			w := newPreemptWorld(t, nodes, append(pods, hi...), pgs...)
			for _, h := range tc.holders {
				_, out := w.pl.ledger.Pin(placement.PinRequest{Gang: testNS + "/" + h.gang, Owner: "uid-" + h.gang, Key: h.key, Domain: h.domain,
					Reserved: placement.Reservation{h.node: {Count: 1, Each: topology.Resources{testGPU: 1}}},
					Capacity: w.pl.planner.SnapshotCapacity(), Remaining: 2, MinMember: 2}, gang.Info{}, "")
				if out != placement.Pinned {
					t.Fatalf("pin %s: %v", h.gang, out)
				}
			}
			res, st := w.postFilter(hi[0])
			if !tc.preempts {
				wantWait(t, st, "; preemption: evicting lower-priority pods would not free one domain for 4 members")
				if _, ok := w.pl.ledger.Commitment(testNS + "/l1"); !ok {
					t.Fatal("the higher-priority holder was released")
				}
				if len(w.remaining()) != len(pods)+4 {
					t.Fatalf("evicted: %v", w.remaining())
				}
				return
			}
			assertNominated(t, res, st, "a1", "a2", "a3", "a4")
			for _, h := range tc.holders {
				if _, ok := w.pl.ledger.Commitment(testNS + "/" + h.gang); ok {
					t.Fatalf("lower-priority holder %s kept its reservation", h.gang)
				}
			}
			if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
				t.Fatalf("hi pin = %+v, %v; want a hold on a", c, ok)
			}
		})
	}
}
