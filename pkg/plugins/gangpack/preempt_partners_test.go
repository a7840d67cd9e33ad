package gangpack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Partner placement groups in preemption: a group preempts, and is evicted, as one unit.

// A placement group that fits nowhere preempts as one unit (docs/design.md §19, item 7): one group domain is
// freed for every partner, the victims are evicted whole, and the other partner waits on the
// same victims instead of preempting again.
func TestPartnerGroupPreemptsAsOneUnit(t *testing.T) {
	nodes := append(cliqueNodes("c1", "", 4), cliqueNodes("c2", "", 2)...)
	var pods []*v1.Pod
	for i, n := range []string{"c1-0", "c1-1", "c1-2", "c1-3"} {
		pods = append(pods, placedOn(prio(gangMember(fmt.Sprintf("low-%d", i), "low", 1), 1), n))
	}
	pods = append(pods, placedOn(prio(gangMember("small-0", "small", 1), 1), "c2-0"))
	a, b := members("a", 2), members("b", 2)
	for _, p := range append(slices.Clone(a), b...) {
		pods = append(pods, prio(p, 10))
	}
	w := newPreemptWorldArgs(t, groupArgs(), nodes, pods, podGroup("low", 4), podGroup("small", 1),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	res, st := w.postFilter(a[0])
	if !st.IsSuccess() || res == nil {
		t.Fatalf("PostFilter(a-0) = %v, %v; want a preemption", res, st)
	}
	want := []string{"a-0", "a-1", "b-0", "b-1", "small-0"}
	if got := w.remaining(); !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v (the low gang evicted whole, c2 untouched)", got, want)
	}
	if n := w.eventNotes()[testNS+"/low-0"]; n != "Preempted by gang "+testNS+"/a to place it in domain c1" {
		t.Fatalf("Preempted event on low-0 = %q", n)
	}
	_, st = w.postFilter(b[0])
	if !strings.Contains(st.Message(), "; preemption: waiting for 4 preempted pods to terminate in domain c1") {
		t.Fatalf("PostFilter(b-0) = %q, want it to wait on the group's victims", st.Message())
	}
	if got := w.remaining(); !slices.Equal(got, want) {
		t.Fatalf("pods left after the partner's cycle %v, want %v", got, want)
	}
}

// A partner whose PodGroup was deleted stays in its placement group while its member pods
// carry the group label: preemption evicts it together with the partners, never alone.
func TestPlacementGroupVictimUnitOutlivesDeletedPodGroup(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1)}
	partner := func(name, gang, node string) *v1.Pod {
		p := placedOn(prio(gangMember(name, gang, 1), 10), node)
		p.Labels[testGroupLabel] = "svc"
		return p
	}
	pods := append([]*v1.Pod{partner("prefill-0", "prefill", "a0"), partner("decode-0", "decode", "a1")},
		gangOn("mid", 30, "b0", "b1")...)
	hi := prio(gangMember("hi-0", "hi", 1), 20)
	// prefill's PodGroup is gone; decode's still names the group.
	w := newPreemptWorldArgs(t, groupArgs(), nodes, append(pods, hi),
		partnerPG("decode", 1, "svc", "2", ""), podGroup("mid", 2), podGroup("hi", 1))

	if _, st := w.postFilter(hi); !st.IsSuccess() {
		t.Fatalf("PostFilter(hi-0) = %v, want a preemption", st)
	}
	if got, want := w.remaining(), []string{"hi-0", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v (the whole placement group evicted)", got, want)
	}
}
