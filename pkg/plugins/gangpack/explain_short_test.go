package gangpack

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain/wire"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// A forming gang whose pinned domain became short is explained as PreFilter says it:
// "pinned short", not degraded. Members the scheduler only assumed (waiting at Permit) are
// not bound: the API server shows them unscheduled, and that is what PreFilter reads.
func TestExplainFormingShortIsNotDegraded(t *testing.T) {
	nodes := []*v1.Node{testNode("n1", "d", 1), testNode("n2", "d", 1), testNode("n3", "d", 1), testNode("n4", "d", 1)}
	var members []*v1.Pod
	for _, name := range []string{"g-0", "g-1", "g-2", "g-3"} {
		members = append(members, gangMember(name, "g", 1))
	}
	pg := podGroup("g", 4)
	w := newWorld(t, nil, nodes, members, pg)
	var waiting []*v1.Pod
	for i, node := range []string{"n1", "n2"} {
		c := w.mustPin(members[i])
		if st := c.reserveOn(node); !st.IsWait() {
			t.Fatalf("Permit(%s) = %v, want Wait", members[i].Name, st)
		}
		waiting = append(waiting, assumed(members[i], node))
		w.resnap(waiting...)
	}
	hog := standalone("hog") // takes n4: the pinned domain has room for 1 of the 2 left
	hog.Spec.NodeName = "n4"
	w.addPod(hog)
	w.resnap(waiting...)

	_, st := w.preFilter(members[2])
	if st.IsSuccess() || !strings.HasPrefix(st.Message(), "pinned domain d cannot fit") {
		t.Fatalf("PreFilter(g-2) = %v, want pinned short", st)
	}
	doc := explain.Reservations(wire.Wire(w.pl.ledger.Holds(), w.pl.ledger.AssumedMembers(), w.pl.ledger.Active(), w.pl.args))
	c := &explain.Cluster{Nodes: w.nodes, Pods: w.pods, Reservations: &doc, Args: w.pl.args}
	got, err := explain.Explain(c, explain.Request{PodGroup: pg, Pod: members[2]})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Reason, "is bound in domain") || !strings.HasPrefix(got.Reason, st.Message()) {
		t.Fatalf("explain's reason %q, PreFilter's %q: want PreFilter's, not degraded", got.Reason, st.Message())
	}
}

// A member assumed under an attempt that no longer owns the gang's pin (unwound while it
// waited at Permit, not yet unreserved) is no placed member for the scheduler; explain does
// not count it either, and reaches PreFilter's decision.
func TestExplainSkipsDeadAttemptMembers(t *testing.T) {
	nodes := []*v1.Node{testNode("n1", "d", 1), testNode("n2", "d", 1), testNode("n3", "d", 1),
		testNode("e1", "e", 1), testNode("e2", "e", 1)}
	members := []*v1.Pod{gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)}
	pg := podGroup("g", 2)
	w := newWorld(t, nil, nodes, members, pg)
	c := w.mustPin(members[0])
	node := c.res.NodeNames.UnsortedList()[0]
	if st := c.reserveOn(node); !st.IsWait() {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.resnap(assumed(members[0], node))
	w.pl.ledger.Unwind(klog.Background(), testNS+"/g", placement.AnyID, gang.CausePreempted, false)
	if len(w.pl.ledger.AssumedMembers()) != 1 {
		t.Fatalf("assumed members %v, want g-0 still reserved", w.pl.ledger.AssumedMembers())
	}

	doc := explain.Reservations(wire.Wire(w.pl.ledger.Holds(), w.pl.ledger.AssumedMembers(), w.pl.ledger.Active(), w.pl.args))
	cl := &explain.Cluster{Nodes: w.nodes, Pods: w.pods, Reservations: &doc, Args: w.pl.args}
	got, err := explain.Explain(cl, explain.Request{PodGroup: pg, Pod: members[1]})
	if err != nil {
		t.Fatal(err)
	}
	cyc, st := w.preFilter(members[1])
	want := ""
	if st.IsSuccess() {
		want = plan.ReadPin(cyc.cs).Domain
	}
	if got.ChosenDomain != want || (want == "" && !strings.HasPrefix(got.Reason, st.Message())) || got.Placed != 0 {
		t.Fatalf("explain: %q placed %d (%s); PreFilter: %q (%v); want the same, no member placed", got.ChosenDomain, got.Placed, got.Reason, want, st)
	}
}
