package gangpack

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
)

// preemptedEvents counts the Preempted events about the pod ns/name.
func (w *preemptWorld) preemptedEvents(name string) int {
	w.t.Helper()
	w.settle()
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	n := 0
	for _, e := range w.h.events {
		if e.reason == "Preempted" && e.regarding == testNS+"/"+name {
			n++
		}
	}
	return n
}

// A victim rejected while it waited at Permit stays in the API. Once a later scheduling cycle
// of its own binds it on another node, it is a new placement, not a victim that escaped its
// eviction: the preemptor neither waits on it nor evicts it again (evicting it alone would
// split the unit it now belongs to).
func TestPreemptVictimPlacedElsewhereIsNew(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	if n := w.preemptedEvents("low-0"); n != 1 {
		t.Fatalf("low-0 has %d Preempted events after the preemption, want 1", n)
	}
	// low-1 still terminates on a2; low-0 was placed again, on b1.
	w.updatePod(terminating(victims[1]))
	moved := victims[0].DeepCopy()
	moved.Spec.NodeName = "b1"
	w.updatePod(moved)
	w.resnap()
	_, st := w.postFilter(hi[1])
	if want := "; preemption: waiting for 1 preempted pods to terminate in domain a"; st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PostFilter = %v, want %q", st, want)
	}
	if n := w.preemptedEvents("low-0"); n != 1 {
		t.Fatalf("low-0, placed again on b1, was evicted again (%d Preempted events)", n)
	}
}
