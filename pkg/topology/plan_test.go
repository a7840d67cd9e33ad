package topology

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

type wantDomain struct {
	room  int
	cands []string
	nodes []string
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name  string
		gang  Gang
		nodes []Node
		want  map[string]wantDomain
	}{
		{
			name:  "two 1-GPU members share one 2-GPU node",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 2},
			nodes: []Node{nd("n1", "a", gpu(2), 110, true)},
			want:  map[string]wantDomain{"a": {2, []string{"n1"}, []string{"n1"}}},
		},
		{
			name:  "a 2-GPU node with one free pod slot cannot take both",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 2},
			nodes: []Node{nd("n1", "a", gpu(2), 1, true)},
			want:  map[string]wantDomain{"a": {0, nil, []string{"n1"}}},
		},
		{
			name:  "apart: one big node cannot host two members",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 2, Apart: true},
			nodes: []Node{nd("n1", "a", gpu(8), 110, true)},
			want:  map[string]wantDomain{"a": {0, nil, []string{"n1"}}},
		},
		{
			name: "apart: one node per member",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{2}, Need: 3, Apart: true},
			nodes: []Node{
				nd("a1", "a", gpu(8), 110, true),
				nd("a2", "a", gpu(8), 110, true),
				nd("b1", "b", gpu(8), 110, true),
				nd("b2", "b", gpu(8), 110, true),
				nd("b3", "b", gpu(8), 110, true),
			},
			want: map[string]wantDomain{
				"a": {0, nil, []string{"a1", "a2"}},
				"b": {3, []string{"b1", "b2", "b3"}, []string{"b1", "b2", "b3"}},
			},
		},
		{
			name: "apart: trace 4.8, gang of 2 with a=2 nodes and b=3 nodes",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 2, Apart: true},
			nodes: []Node{
				nd("a1", "a", gpu(1), 110, true),
				nd("a2", "a", gpu(1), 110, true),
				nd("b1", "b", gpu(1), 110, true),
				nd("b2", "b", gpu(1), 110, true),
				nd("b3", "b", gpu(1), 110, true),
			},
			want: map[string]wantDomain{
				"a": {2, []string{"a1", "a2"}, []string{"a1", "a2"}},
				"b": {3, []string{"b1", "b2", "b3"}, []string{"b1", "b2", "b3"}},
			},
		},
		{
			// Shape 0 (current) is flexible: fits A and B. Shape 1 (sibling) fits only A.
			// If the current member took A, the constrained sibling would have no node.
			name: "flexible current member never takes the constrained sibling's only node",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(1)}, Current: 0, Siblings: []int{0, 1}, Need: 2},
			nodes: []Node{
				nd("A", "d", gpu(1), 110, true, true),
				nd("B", "d", gpu(1), 110, true, false),
			},
			want: map[string]wantDomain{"d": {2, []string{"B"}, []string{"A", "B"}}},
		},
		{
			name: "constrained current member goes to its only node",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(1)}, Current: 1, Siblings: []int{1, 0}, Need: 2},
			nodes: []Node{
				nd("A", "d", gpu(1), 110, true, true),
				nd("B", "d", gpu(1), 110, true, false),
			},
			want: map[string]wantDomain{"d": {2, []string{"A"}, []string{"A", "B"}}},
		},
		{
			// A fits both shapes and has room 2; B fits only the current shape, room 1.
			// Need 3 with 2 constrained siblings: they both need A, so the current member
			// must go to B.
			name: "current member's slot is taken out of its node",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(1)}, Current: 0, Siblings: []int{0, 2}, Need: 3},
			nodes: []Node{
				nd("A", "d", gpu(2), 110, true, true),
				nd("B", "d", gpu(1), 110, true, false),
			},
			want: map[string]wantDomain{"d": {3, []string{"B"}, []string{"A", "B"}}},
		},
		{
			name: "heterogeneous gang chooses the domain that fits both sizes",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Current: 0, Siblings: []int{0, 1}, Need: 2},
			nodes: []Node{
				// small: four 1-GPU nodes; the 2-GPU member fits none of them
				nd("s1", "small", gpu(1), 110, true, false),
				nd("s2", "small", gpu(1), 110, true, false),
				nd("s3", "small", gpu(1), 110, true, false),
				nd("s4", "small", gpu(1), 110, true, false),
				// mixed: two 2-GPU nodes fit both shapes
				nd("m1", "mixed", gpu(2), 110, true, true),
				nd("m2", "mixed", gpu(2), 110, true, true),
			},
			want: map[string]wantDomain{
				"small": {0, nil, []string{"s1", "s2", "s3", "s4"}},
				"mixed": {2, []string{"m1", "m2"}, []string{"m1", "m2"}},
			},
		},
		{
			name: "heterogeneous gang, current is the large member",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Current: 1, Siblings: []int{1, 0}, Need: 2},
			nodes: []Node{
				nd("s1", "small", gpu(1), 110, true, false),
				nd("s2", "small", gpu(1), 110, true, false),
				nd("m1", "mixed", gpu(4), 110, true, true),
			},
			want: map[string]wantDomain{
				"small": {0, nil, []string{"s1", "s2"}},
				"mixed": {2, []string{"m1"}, []string{"m1"}},
			},
		},
		{
			name: "surplus siblings that fit nowhere never block",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(8)}, Current: 0, Siblings: []int{1, 3}, Need: 2},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true, false),
				nd("n2", "a", gpu(1), 110, true, false),
			},
			want: map[string]wantDomain{"a": {2, []string{"n1", "n2"}, []string{"n1", "n2"}}},
		},
		{
			name: "more siblings than slots: only need-1 must be placed",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{5}, Need: 2, Apart: true},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true),
				nd("n2", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{"a": {2, []string{"n1", "n2"}, []string{"n1", "n2"}}},
		},
		{
			name:  "too few siblings for need (incomplete templates) cannot form",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 3},
			nodes: []Node{nd("n1", "a", gpu(8), 110, true)},
			want:  map[string]wantDomain{"a": {0, nil, []string{"n1"}}},
		},
		{
			name: "domain without candidates gets room 0 and still appears",
			gang: Gang{Shapes: []Resources{gpu(4)}, Siblings: []int{0}, Need: 1},
			nodes: []Node{
				nd("x1", "x", gpu(2), 110, false),
				nd("x2", "x", gpu(2), 110, false),
				nd("y1", "y", gpu(4), 110, true),
			},
			want: map[string]wantDomain{
				"x": {0, nil, []string{"x1", "x2"}},
				"y": {1, []string{"y1"}, []string{"y1"}},
			},
		},
		{
			name: "nodes with an empty domain are ignored",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{1}, Need: 2, Apart: true},
			nodes: []Node{
				nd("free1", "", gpu(8), 110, true),
				nd("free2", "", gpu(8), 110, true),
				nd("a1", "a", gpu(8), 110, true),
			},
			want: map[string]wantDomain{"a": {0, nil, []string{"a1"}}},
		},
		{
			name:  "only unlabelled nodes: empty plan",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Need: 1},
			nodes: []Node{nd("free1", "", gpu(8), 110, true)},
			want:  map[string]wantDomain{},
		},
		{
			name:  "no nodes: empty plan",
			gang:  Gang{Shapes: []Resources{gpu(1)}, Need: 1},
			nodes: nil,
			want:  map[string]wantDomain{},
		},
		{
			name: "need 1 with no siblings: every fitting node is a candidate",
			gang: Gang{Shapes: []Resources{gpu(2)}, Need: 1},
			nodes: []Node{
				nd("n3", "a", gpu(8), 110, true),
				nd("n1", "a", gpu(2), 110, true),
				nd("n2", "a", gpu(1), 110, false),
			},
			want: map[string]wantDomain{"a": {2, []string{"n1", "n3"}, []string{"n1", "n2", "n3"}}},
		},
		{
			name: "need 1 with an explicit zero sibling list",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{0}, Need: 1},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{"a": {1, []string{"n1"}, []string{"n1"}}},
		},
		{
			name: "room counts nodes that only siblings fit; candidates only current-fit nodes",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(1)}, Current: 0, Siblings: []int{0, 1}, Need: 2},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true, false),
				nd("n2", "a", gpu(1), 110, false, true),
			},
			want: map[string]wantDomain{"a": {2, []string{"n1"}, []string{"n1", "n2"}}},
		},
		{
			name: "identical nodes form one class: all are candidates",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{2}, Need: 3, Apart: true},
			nodes: []Node{
				nd("n3", "a", gpu(1), 110, true),
				nd("n1", "a", gpu(1), 110, true),
				nd("n2", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{"a": {3, []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3"}}},
		},
		{
			name: "identical nodes, one short of need",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{3}, Need: 4, Apart: true},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true),
				nd("n2", "a", gpu(1), 110, true),
				nd("n3", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{"a": {0, nil, []string{"n1", "n2", "n3"}}},
		},
		{
			name: "current shape index out of range: nothing can form",
			gang: Gang{Shapes: []Resources{gpu(1)}, Current: 3, Siblings: []int{1}, Need: 1},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{"a": {0, nil, []string{"n1"}}},
		},
		{
			name: "room sums member room across nodes (mixed per-node room)",
			gang: Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{4}, Need: 5},
			nodes: []Node{
				nd("n1", "a", gpu(3), 110, true),
				nd("n2", "a", gpu(2), 110, true),
				nd("n3", "a", gpu(8), 1, true),
			},
			want: map[string]wantDomain{"a": {6, []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3"}}},
		},
		{
			name: "equal domain values are one domain, distinct values stay distinct",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 1},
			nodes: []Node{
				nd("n1", "a", gpu(1), 110, true),
				nd("n2", "A", gpu(1), 110, true),
				nd("n3", "a", gpu(1), 110, true),
			},
			want: map[string]wantDomain{
				"a": {2, []string{"n1", "n3"}, []string{"n1", "n3"}},
				"A": {1, []string{"n2"}, []string{"n2"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.gang
			plans := Plan(&g, tc.nodes)
			if len(plans) != len(tc.want) {
				t.Fatalf("Plan returned %d domains %v, want %d", len(plans), slices.Sorted(maps.Keys(plans)), len(tc.want))
			}
			for d, w := range tc.want {
				p, ok := plans[d]
				if !ok {
					t.Fatalf("domain %q missing from plan", d)
				}
				if p.Domain != d {
					t.Errorf("plan[%q].Domain = %q", d, p.Domain)
				}
				if p.Room != w.room {
					t.Errorf("plan[%q].Room = %d, want %d", d, p.Room, w.room)
				}
				if !slices.Equal(p.Candidates, w.cands) {
					t.Errorf("plan[%q].Candidates = %v, want %v", d, p.Candidates, w.cands)
				}
				if !slices.Equal(p.Nodes, w.nodes) {
					t.Errorf("plan[%q].Nodes = %v, want %v", d, p.Nodes, w.nodes)
				}
			}
			rooms := Rooms(plans)
			for d, w := range tc.want {
				if rooms[d] != w.room {
					t.Errorf("Rooms[%q] = %d, want %d", d, rooms[d], w.room)
				}
			}
			if len(rooms) != len(tc.want) {
				t.Errorf("Rooms has %d entries, want %d", len(rooms), len(tc.want))
			}
		})
	}
}

// TestPlanBestFitHeterogeneous checks end to end that the best fit over a plan's rooms picks
// the domain where a heterogeneous gang fits, even though another domain has more raw room.
func TestPlanBestFitHeterogeneous(t *testing.T) {
	g := Gang{Shapes: []Resources{gpu(1), gpu(2)}, Current: 0, Siblings: []int{0, 1}, Need: 2}
	nodes := []Node{
		nd("s1", "a-small", gpu(1), 110, true, false),
		nd("s2", "a-small", gpu(1), 110, true, false),
		nd("m1", "z-mixed", gpu(2), 110, true, true),
		nd("m2", "z-mixed", gpu(2), 110, true, true),
		nd("m3", "z-mixed", gpu(2), 110, true, true),
	}
	d, ok := BestFit(Rooms(Plan(&g, nodes)), g.Need)
	if !ok || d != "z-mixed" {
		t.Fatalf("BestFit = %q,%v; want z-mixed", d, ok)
	}
}

// TestPlanDoesNotMutateInputs guards against the planner writing into the caller's nodes.
func TestPlanDoesNotMutateInputs(t *testing.T) {
	g := Gang{Shapes: []Resources{gpu(1), gpu(2)}, Siblings: []int{1, 1}, Need: 3}
	nodes := []Node{
		nd("n1", "a", gpu(4), 110, true, true),
		nd("n2", "a", gpu(1), 110, true),
	}
	before := fmt.Sprintf("%+v %+v", g, nodes)
	Plan(&g, nodes)
	if after := fmt.Sprintf("%+v %+v", g, nodes); after != before {
		t.Fatalf("inputs mutated:\n before %s\n after  %s", before, after)
	}
}
