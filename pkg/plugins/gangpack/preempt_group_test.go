package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The partners of a placement group are one victim unit: evicting one evicts all of them,
// and the unit frees room on every partner's nodes; a gang outside the group stays its own
// unit.
func TestPlacementGroupIsOneVictimUnit(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1)}
	low := func(p *v1.Pod, node string) *v1.Pod {
		p.Spec.Priority = ptr.To[int32](10)
		return bound(p, node)
	}
	pods := []*v1.Pod{
		low(gangMember("prefill-0", "prefill", 1), "a0"),
		low(gangMember("decode-0", "decode", 1), "a1"),
		low(gangMember("other-0", "other", 1), "b0"),
	}
	w := newWorld(t, nil, nodes, pods, podGroup("prefill", 1), podGroup("decode", 1), podGroup("other", 1))
	groupOf := func(q *v1.Pod) string {
		if g := q.Labels[PodGroupLabel]; g == "prefill" || g == "decode" {
			return "group:ns/svc"
		}
		return ""
	}
	units := victimUnits(w.nodeInfos(), 100, "", nil, groupOf)
	if len(units) != 2 {
		t.Fatalf("%d units, want the group and the other gang", len(units))
	}
	g := units[0]
	slices.Sort(g.gangs)
	if g.unit.Name != "group:ns/svc" || !slices.Equal(g.gangs, []string{"ns/decode", "ns/prefill"}) || g.unit.Pods != 2 ||
		len(g.unit.Frees) != 2 {
		t.Fatalf("group unit %+v (gangs %v), want both partners' pods on a0 and a1", g.unit, g.gangs)
	}
	if o := units[1]; o.unit.Name != "ns/other" || !slices.Equal(o.gangs, []string{"ns/other"}) {
		t.Fatalf("other unit %+v (gangs %v)", o.unit, o.gangs)
	}
	// Without a group resolver each gang is its own unit.
	if n := len(victimUnits(w.nodeInfos(), 100, "", nil, nil)); n != 3 {
		t.Fatalf("%d units without groups, want 3", n)
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
