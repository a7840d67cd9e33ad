package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Partner placement groups in preemption: a group is evicted as one unit.

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
