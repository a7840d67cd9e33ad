package topology

import (
	"reflect"
	"testing"
)

func TestGroupPreemptionCandidates(t *testing.T) {
	gpu := func(n int64) Resources { return Resources{"gpu": n} }
	partner := func(need int) Partner {
		return Partner{Gang: &Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{need - 1}, Need: need, Apart: true}, Key: 0}
	}
	// node is a one-GPU node of group domain (and sub-domain) d; free is its free GPUs.
	node := func(name, d string, free int64) GroupNode {
		return GroupNode{Name: name, Group: d, Sub: []string{d, d}, Free: gpu(free), FreePods: 10,
			Fits: [][]bool{{true}, {true}}}
	}
	// unit holds one one-GPU pod on each of nodes.
	unit := func(name string, prio int32, nodes ...string) VictimUnit {
		u := VictimUnit{Name: name, Priority: prio, Pods: len(nodes), Frees: map[string]NodeFree{}}
		for _, n := range nodes {
			u.Frees[n] = NodeFree{Resources: gpu(1), Pods: 1}
		}
		return u
	}
	two := []Partner{partner(2), partner(2)}
	tests := []struct {
		name     string
		partners []Partner
		nodes    []GroupNode
		units    []VictimUnit
		want     map[string][]int // domain → victims
	}{
		{"both partners need the whole domain freed: both low gangs go",
			two,
			[]GroupNode{node("a0", "a", 0), node("a1", "a", 0), node("a2", "a", 0), node("a3", "a", 0)},
			[]VictimUnit{unit("ns/l1", 1, "a0", "a1"), unit("ns/l2", 1, "a2", "a3")},
			map[string][]int{"a": {0, 1}}},
		{"free nodes count: one low gang is enough",
			two,
			[]GroupNode{node("a0", "a", 1), node("a1", "a", 1), node("a2", "a", 0), node("a3", "a", 0)},
			[]VictimUnit{unit("ns/l1", 1, "a2", "a3"), unit("ns/l2", 1, "a2")},
			map[string][]int{"a": {0}}},
		{"equal priority is never a victim",
			two,
			[]GroupNode{node("a0", "a", 0), node("a1", "a", 0), node("a2", "a", 1), node("a3", "a", 1)},
			[]VictimUnit{unit("ns/l1", 5, "a0", "a1")},
			map[string][]int{}},
		{"room split across group domains is never bought",
			two,
			[]GroupNode{node("a0", "a", 0), node("a1", "a", 0), node("b0", "b", 0), node("b1", "b", 0)},
			[]VictimUnit{unit("ns/l1", 1, "a0", "a1"), unit("ns/l2", 1, "b0", "b1")},
			map[string][]int{}},
		{"each group domain judged alone; the cheaper one first",
			two,
			[]GroupNode{node("a0", "a", 0), node("a1", "a", 0), node("a2", "a", 0), node("a3", "a", 0),
				node("b0", "b", 1), node("b1", "b", 1), node("b2", "b", 1), node("b3", "b", 0)},
			[]VictimUnit{unit("ns/l1", 1, "a0", "a1", "a2", "a3"), unit("ns/l2", 1, "b3")},
			map[string][]int{"b": {1}, "a": {0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cands := GroupPreemptionCandidates(tc.partners, 5, tc.nodes, tc.units)
			got := map[string][]int{}
			for _, c := range cands {
				got[c.Domain] = c.Victims
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("candidates %v, want %v", got, tc.want)
			}
			if len(cands) > 1 && cands[0].Domain != "b" {
				t.Fatalf("best candidate %s, want b (one pod evicted)", cands[0].Domain)
			}
		})
	}
}
