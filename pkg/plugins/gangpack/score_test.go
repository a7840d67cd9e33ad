package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A pinned member scores the nodes its gang reserved above the rest of the domain, so it
// takes its own slot instead of room other gangs count on.
func TestPinnedMemberPrefersReservedNodes(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8)}
	x0, x1 := gangMember("x-0", "x", 4), gangMember("x-1", "x", 4)
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, x1}, podGroup("x", 2))
	c := w.mustPin(x0)
	infos := w.nodeInfos()
	if st := w.pl.PreScore(w.ctx, c.cs, x0, infos); !st.IsSuccess() {
		t.Fatalf("PreScore = %v", st)
	}
	score := func(node string) int64 {
		ni, _ := w.h.snapshot.NodeInfos().Get(node)
		s, st := w.pl.Score(w.ctx, c.cs, x0, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		return s
	}
	if a0, a1 := score("a0"), score("a1"); a0 <= a1 {
		t.Fatalf("scores a0=%d a1=%d, want the reserved node a0 first", a0, a1)
	}
}

// A spread anchor's deferred plan scores the domains by preference first, then best fit;
// without preferences by best fit alone, as before.
func TestDeferredScoresPreferenceFirst(t *testing.T) {
	rooms := map[string]int{"tight": 2, "mid": 4, "loose": 8}
	if got := deferredScores(rooms, nil); got["tight"] != 6 || got["mid"] != 4 || got["loose"] != 0 {
		t.Errorf("without preferences %v, want tight 6, mid 4, loose 0 (max room - room)", got)
	}
	got := deferredScores(rooms, map[string]int64{"loose": 100, "mid": 100})
	if !(got["mid"] > got["loose"] && got["loose"] > got["tight"]) {
		t.Errorf("with preferences %v, want mid (preferred, tighter) > loose (preferred) > tight", got)
	}
}
