package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

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
