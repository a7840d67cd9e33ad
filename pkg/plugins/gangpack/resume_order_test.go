package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
)

// Every resumed gang keeps its nominated nodes: the slots nominated members had are reserved
// before any gang's other slots. Domain d has one slot on each of n1-n3; gang a has a member
// nominated to n3 and one without, gang b a member nominated to n1. Resumed in key order, a's
// second slot went to n1 (node-name order) and b was dropped as no_room.
func TestResumeNominatedSlotsBeforeRest(t *testing.T) {
	nodes := []*v1.Node{testNode("n1", "d", 1), testNode("n2", "d", 1), testNode("n3", "d", 1)}
	pods := []*v1.Pod{nominated(gangMember("a-0", "a", 1), "n3"), gangMember("a-1", "a", 1),
		nominated(gangMember("b-0", "b", 1), "n1")}
	w := newWorld(t, nil, nodes, pods, podGroup("a", 2), podGroup("b", 1))
	w.failover()
	x := standalone("x")
	w.addPod(x)
	w.preFilter(x) // the first PreFilter resumes both
	if pin, ok := w.pl.ledger.Commitment(testNS + "/b"); !ok || !pin.Resumed || pin.Domain != "d" {
		t.Fatalf("b's pin %+v %v, want a resumed pin on d", pin, ok)
	}
	if got := reservedNodes(w, "b"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("b reserves %v, want n1 (its nominated node)", got)
	}
	if got := reservedNodes(w, "a"); !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("a reserves %v, want n2 n3", got)
	}
}

// otherScheduler returns a copy of p scheduled by another scheduler.
func otherScheduler(p *v1.Pod) *v1.Pod {
	q := p.DeepCopy()
	q.Spec.SchedulerName = "other-scheduler"
	return q
}

// A gang of another scheduler that uses the same pod-group label is not resumed: its
// nominations are not recorded, and a recorded gang's pods of another scheduler do not pin it.
func TestResumeIgnoresOtherSchedulers(t *testing.T) {
	nodes := []*v1.Node{testNode("n1", "d", 1), testNode("n2", "d", 1), testNode("n3", "e", 1)}
	pods := []*v1.Pod{otherScheduler(nominated(gangMember("o-0", "o", 1), "n1")),
		otherScheduler(nominated(gangMember("o-1", "o", 1), "n2"))}
	w := newWorld(t, nil, nodes, pods, podGroup("o", 2))
	w.failover()
	w.pl.ledger.StartCycle()
	if got := w.pl.ledger.TakeNominated(); len(got) != 0 {
		t.Fatalf("TakeNominated = %v, want nothing (the pods are another scheduler's)", got)
	}

	w.failover()
	w.pl.ledger.Nominee(testNS+"/o", pods[0].UID, ledger.NominationSeen{}, true) // recorded anyway
	if got, _ := w.pl.members.LiveUnbound(testNS, "o", ""); len(got) != 0 {
		t.Fatalf("LiveUnbound = %d pods, want none of another scheduler's", len(got))
	}
	x := standalone("x")
	w.addPod(x)
	w.preFilter(x)
	if pin, ok := w.pl.ledger.Commitment(testNS + "/o"); ok {
		t.Fatalf("another scheduler's gang resumed: %+v", pin)
	}
}
