package topology

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// nd builds a Node.
func nd(name, domain string, free Resources, pods int64, fits ...bool) Node {
	return Node{Name: name, Domain: domain, Free: free, FreePods: pods, Fits: fits}
}

func gpu(n int64) Resources { return Resources{"gpu": n} }

func TestNodeRoom(t *testing.T) {
	cases := []struct {
		name string
		gang Gang
		node Node
		want int
	}{
		{
			name: "no shape fits",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 4},
			node: nd("n", "a", gpu(8), 110, false),
			want: 0,
		},
		{
			name: "fit vector shorter than shapes counts as no fit",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Need: 4},
			node: nd("n", "a", gpu(8), 110),
			want: 0,
		},
		{
			name: "only the fitting shape of a longer list",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Need: 4},
			node: nd("n", "a", gpu(8), 110, true),
			want: 4,
		},
		{
			name: "apart caps at one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 4, Apart: true},
			node: nd("n", "a", gpu(8), 110, true),
			want: 1,
		},
		{
			name: "apart on a node with no spare copies is still one",
			gang: Gang{Shapes: []Resources{gpu(4)}, Need: 4, Apart: true},
			node: nd("n", "a", gpu(1), 110, true),
			want: 1,
		},
		{
			name: "copies limited by the gpu count",
			gang: Gang{Shapes: []Resources{gpu(2)}, Need: 8},
			node: nd("n", "a", gpu(5), 110, true),
			want: 2,
		},
		{
			name: "copies limited by cpu while gpus are plentiful",
			gang: Gang{Shapes: []Resources{{"gpu": 1, "cpu": 4000}}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 8, "cpu": 10000}, 110, true),
			want: 2,
		},
		{
			name: "copies limited by memory, the tightest of three resources",
			gang: Gang{Shapes: []Resources{{"gpu": 1, "cpu": 1000, "memory": 10}}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 8, "cpu": 6000, "memory": 35}, 110, true),
			want: 3,
		},
		{
			name: "copies limited by FreePods",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), 3, true),
			want: 3,
		},
		{
			name: "no free pod slot still reports one (fit already admits one member)",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), 0, true),
			want: 1,
		},
		{
			name: "negative FreePods clamps to one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), -3, true),
			want: 1,
		},
		{
			name: "negative free resource clamps to zero copies then one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(-4), 110, true),
			want: 1,
		},
		{
			name: "negative free of one resource does not affect an unrequested one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 3, "cpu": -100}, 110, true),
			want: 3,
		},
		{
			name: "missing resource on the node counts as zero free",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", Resources{"cpu": 1000}, 110, true),
			want: 1,
		},
		{
			name: "perNode = Need caps a large node",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 3},
			node: nd("n", "a", gpu(8), 110, true),
			want: 3,
		},
		{
			name: "Need below one is treated as one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 0},
			node: nd("n", "a", gpu(8), 110, true),
			want: 1,
		},
		{
			name: "zero-request member limited by pods",
			gang: Gang{Shapes: []Resources{{}}, Need: 10},
			node: nd("n", "a", Resources{}, 5, true),
			want: 5,
		},
		{
			name: "explicit zero requests limited by pods",
			gang: Gang{Shapes: []Resources{{"gpu": 0, "cpu": 0}}, Need: 10},
			node: nd("n", "a", Resources{}, 4, true),
			want: 4,
		},
		{
			name: "zero-request member limited by Need when pods are plentiful",
			gang: Gang{Shapes: []Resources{{}}, Need: 2},
			node: nd("n", "a", nil, 110, true),
			want: 2,
		},
		{
			name: "largest fitting shape sets the copy size",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(4)}, Need: 8},
			node: nd("n", "a", gpu(8), 110, true, true),
			want: 2,
		},
		{
			name: "non-fitting large shape is ignored",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(4)}, Need: 8},
			node: nd("n", "a", gpu(6), 110, true, false),
			want: 6,
		},
		{
			name: "per-resource maximum across shapes",
			gang: Gang{Shapes: []Resources{{"cpu": 4, "gpu": 1}, {"cpu": 1, "gpu": 2}}, Need: 8},
			node: nd("n", "a", Resources{"cpu": 8, "gpu": 8}, 110, true, true),
			want: 2, // perCopy = {cpu:4, gpu:2} → min(8/4, 8/2)
		},
		{
			name: "extra fit entries beyond the shapes are ignored",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(2), 110, false, true),
			want: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, n := tc.gang, tc.node
			if got := NodeRoom(&g, &n); got != tc.want {
				t.Fatalf("NodeRoom = %d, want %d", got, tc.want)
			}
		})
	}
}

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

func TestBestFit(t *testing.T) {
	// Every reference case of placement.md §4.4, then extra edges.
	cases := []struct {
		name   string
		rooms  map[string]int
		size   int
		want   string
		wantOK bool
	}{
		{"ref: {} 4 → none", map[string]int{}, 4, "", false},
		{"ref: {a:2,b:3} 4 → none", map[string]int{"a": 2, "b": 3}, 4, "", false},
		{"ref: {a:8} 4 → a", map[string]int{"a": 8}, 4, "a", true},
		{"ref: {a:18,b:6,c:4} 4 → c", map[string]int{"a": 18, "b": 6, "c": 4}, 4, "c", true},
		{"ref: {a:18,b:5,c:2} 4 → b", map[string]int{"a": 18, "b": 5, "c": 2}, 4, "b", true},
		{"ref: {big:18,exact:4} 4 → exact", map[string]int{"big": 18, "exact": 4}, 4, "exact", true},
		{"ref: {z:6,a:6,m:6} 4 → a", map[string]int{"z": 6, "a": 6, "m": 6}, 4, "a", true},
		{"ref: {a:3,b:1} 1 → b", map[string]int{"a": 3, "b": 1}, 1, "b", true},
		{"ref: {a:18} 18 → a", map[string]int{"a": 18}, 18, "a", true},
		{"ref: size 0 → none", map[string]int{"a": 18, "b": 4}, 0, "", false},
		{"ref: size -3 → none", map[string]int{"a": 18, "b": 4}, -3, "", false},
		{"nil map", nil, 1, "", false},
		{"zero rooms never fit", map[string]int{"a": 0, "b": 0}, 1, "", false},
		{"negative rooms never fit", map[string]int{"a": -5}, 1, "", false},
		{"size 0 with zero room → none", map[string]int{"a": 0}, 0, "", false},
		{"byte-wise order: upper case sorts first", map[string]int{"a": 4, "B": 4}, 4, "B", true},
		{"byte-wise order: prefix sorts first", map[string]int{"ab": 4, "a": 4, "b": 4}, 4, "a", true},
		{"byte-wise order: digits before letters", map[string]int{"a": 4, "9": 4, "10": 4}, 4, "10", true},
		{"tie only among the smallest fitting room", map[string]int{"a": 9, "y": 5, "x": 5, "b": 3}, 4, "x", true},
		{"empty domain value is a valid key", map[string]int{"": 4, "a": 4}, 4, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ { // map order varies between calls
				got, ok := BestFit(tc.rooms, tc.size)
				if got != tc.want || ok != tc.wantOK {
					t.Fatalf("BestFit(%v, %d) = %q,%v; want %q,%v", tc.rooms, tc.size, got, ok, tc.want, tc.wantOK)
				}
			}
		})
	}
}

// TestBestFitRanked covers the rank tie-breaker (gang soft spread): among domains whose
// room equals the best fit's room the lowest rank wins, then the byte-wise smallest value;
// rank never prefers a domain with more room.
func TestBestFitRanked(t *testing.T) {
	ranks := func(m map[string]int) func(string) int {
		return func(d string) int { return m[d] }
	}
	cases := []struct {
		name   string
		rooms  map[string]int
		size   int
		rank   func(string) int
		want   string
		wantOK bool
	}{
		{"nil rank is BestFit", map[string]int{"z": 6, "a": 6, "m": 6}, 4, nil, "a", true},
		{"rank breaks a tie", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 2, "m": 1, "z": 1}), "m", true},
		{"lowest rank wins regardless of name", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 5, "m": 3, "z": 0}), "z", true},
		{"equal ranks fall back to name", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 1, "m": 1, "z": 1}), "a", true},
		{"rank never prefers more room", map[string]int{"a": 4, "b": 6}, 4, ranks(map[string]int{"a": 9, "b": 0}), "a", true},
		{"rank ignores domains that do not fit", map[string]int{"a": 2, "b": 6, "c": 6}, 4, ranks(map[string]int{"a": -9, "b": 1, "c": 0}), "c", true},
		{"rank ignores larger rooms among ties", map[string]int{"a": 5, "b": 5, "c": 9}, 4, ranks(map[string]int{"a": 3, "b": 2, "c": -1}), "b", true},
		{"negative ranks", map[string]int{"a": 4, "b": 4}, 4, ranks(map[string]int{"a": 0, "b": -1}), "b", true},
		{"no fitting domain", map[string]int{"a": 2}, 4, ranks(nil), "", false},
		{"size 0", map[string]int{"a": 4}, 0, ranks(nil), "", false},
		{"size -3", map[string]int{"a": 4}, -3, ranks(nil), "", false},
		{"empty map", map[string]int{}, 1, ranks(nil), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				got, ok := BestFitRanked(tc.rooms, tc.size, tc.rank)
				if got != tc.want || ok != tc.wantOK {
					t.Fatalf("BestFitRanked(%v, %d) = %q,%v; want %q,%v", tc.rooms, tc.size, got, ok, tc.want, tc.wantOK)
				}
			}
		})
	}
}

func TestLargest(t *testing.T) {
	cases := []struct {
		rooms    map[string]int
		want     string
		wantRoom int
		wantOK   bool
	}{
		{map[string]int{}, "", 0, false},
		{nil, "", 0, false},
		{map[string]int{"a": 0}, "a", 0, true},
		{map[string]int{"a": 3, "b": 7, "c": 5}, "b", 7, true},
		{map[string]int{"z": 7, "b": 7, "m": 7}, "b", 7, true},
		{map[string]int{"a": -1, "b": -2}, "a", -1, true},
	}
	for _, tc := range cases {
		for i := 0; i < 20; i++ {
			d, r, ok := Largest(tc.rooms)
			if d != tc.want || r != tc.wantRoom || ok != tc.wantOK {
				t.Fatalf("Largest(%v) = %q,%d,%v; want %q,%d,%v", tc.rooms, d, r, ok, tc.want, tc.wantRoom, tc.wantOK)
			}
		}
	}
}

func TestCountFitting(t *testing.T) {
	cases := []struct {
		rooms map[string]int
		size  int
		want  int
	}{
		{nil, 1, 0},
		{map[string]int{"a": 18, "b": 6, "c": 4}, 4, 3},
		{map[string]int{"a": 18, "b": 5, "c": 2}, 4, 2},
		{map[string]int{"a": 2, "b": 3}, 4, 0},
		{map[string]int{"a": 0, "b": 3}, 0, 2},
	}
	for _, tc := range cases {
		if got := CountFitting(tc.rooms, tc.size); got != tc.want {
			t.Errorf("CountFitting(%v, %d) = %d, want %d", tc.rooms, tc.size, got, tc.want)
		}
	}
}

func TestRooms(t *testing.T) {
	plans := map[string]*DomainPlan{
		"a": {Domain: "a", Room: 3},
		"b": {Domain: "b", Room: 0},
	}
	if got, want := Rooms(plans), map[string]int{"a": 3, "b": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Rooms = %v, want %v", got, want)
	}
	if got := Rooms(nil); len(got) != 0 {
		t.Fatalf("Rooms(nil) = %v", got)
	}
}

// bruteIterations is how many random instances a brute-force test checks: full, or 2000
// with -short.
func bruteIterations(full int) int {
	if testing.Short() {
		return 2000
	}
	return full
}

// TestPlanBruteForce compares Plan against an exhaustive search over sibling assignments on
// many small random instances.
func TestPlanBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	iters := bruteIterations(20000)
	withCands, excluded := 0, 0
	for i := 0; i < iters; i++ {
		g, nodes := randomInstance(rng)
		if msg := checkPlan(&g, nodes); msg != "" {
			t.Fatalf("instance %d: %s\ngang=%+v\nnodes=%+v", i, msg, g, nodes)
		}
		has, excl := false, false
		for _, p := range Plan(&g, nodes) {
			if len(p.Candidates) == 0 {
				continue
			}
			has = true
			// a node fitting the current shape that is not a candidate: the matching
			// (not just the fit) decided
			for _, n := range nodes {
				if n.Domain == p.Domain && n.Fits[g.Current] && !slices.Contains(p.Candidates, n.Name) {
					excl = true
				}
			}
		}
		if has {
			withCands++
		}
		if excl {
			excluded++
		}
	}
	t.Logf("%d instances: %d with candidates, %d where a fitting node was excluded", iters, withCands, excluded)
	// Make sure the generator exercises every outcome.
	if withCands == 0 || withCands == iters || excluded == 0 {
		t.Fatalf("generator degenerate: %d/%d instances with candidates, %d with exclusions", withCands, iters, excluded)
	}
}

// randomInstance draws a small gang (≤ 3 shapes, ≤ 6 siblings) and ≤ 5 nodes.
func randomInstance(rng *rand.Rand) (Gang, []Node) {
	b := make([]byte, 64)
	rng.Read(b)
	return decodeInstance(b)
}

// byteSource hands out bytes, then zeros.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	v := s.b[s.i]
	s.i++
	return int(v)
}

// decodeShapes reads a gang's shapes (1..max, each 0..3 gpu and 0..2 cpu) and its current
// shape; siblings and need are left to the caller.
func decodeShapes(s *byteSource, max int) Gang {
	nShapes := 1 + s.next()%max
	g := Gang{Shapes: make([]Resources, nShapes), Siblings: make([]int, nShapes)}
	for k := range g.Shapes {
		r := Resources{}
		if v := s.next() % 4; v > 0 {
			r["gpu"] = int64(v)
		}
		if v := s.next() % 3; v > 0 {
			r["cpu"] = int64(v)
		}
		g.Shapes[k] = r
	}
	g.Current = s.next() % nShapes
	return g
}

// decodeInstance turns bytes into a small planning instance: 1..3 shapes, 0..6 siblings in
// total, need 1..4, 1..5 nodes across domains "", "a", "b".
func decodeInstance(data []byte) (Gang, []Node) {
	s := &byteSource{b: data}
	g := decodeShapes(s, 3)
	nShapes := len(g.Shapes)
	budget := 6
	for k := range g.Siblings {
		v := s.next() % 4
		if v > budget {
			v = budget
		}
		g.Siblings[k] = v
		budget -= v
	}
	g.Need = 1 + s.next()%4
	g.Apart = s.next()%4 == 0
	nNodes := 1 + s.next()%5
	domains := []string{"", "a", "b", "a", "b"}
	nodes := make([]Node, nNodes)
	for j := range nodes {
		n := Node{
			Name:     fmt.Sprintf("n%d", j),
			Domain:   domains[s.next()%len(domains)],
			Free:     Resources{"gpu": int64(s.next()%8) - 1, "cpu": int64(s.next() % 6)},
			FreePods: int64(s.next()%5) - 1,
			Fits:     make([]bool, nShapes),
		}
		bits := s.next()
		for k := range n.Fits {
			n.Fits[k] = bits&(1<<k) != 0 || bits&(1<<(k+3)) != 0
		}
		nodes[j] = n
	}
	return g, nodes
}

// bruteDomain is the exhaustive reference for one domain: candidates and room per §4.3.
func bruteDomain(g *Gang, nodes []*Node) (cands []string, room int) {
	caps := make([]int, len(nodes))
	total := 0
	for j, n := range nodes {
		caps[j] = NodeRoom(g, n)
		total += caps[j]
	}
	var sibs []int // shape of each sibling
	for k, c := range g.Siblings {
		if k >= len(g.Shapes) {
			break
		}
		for i := 0; i < c; i++ {
			sibs = append(sibs, k)
		}
	}
	want := g.Need - 1
	for j0, n0 := range nodes {
		if g.Current < 0 || g.Current >= len(g.Shapes) {
			break
		}
		if g.Current >= len(n0.Fits) || !n0.Fits[g.Current] || caps[j0] <= 0 {
			continue
		}
		c := append([]int(nil), caps...)
		c[j0]--
		if assign(sibs, 0, 0, want, nodes, c) {
			cands = append(cands, n0.Name)
		}
	}
	sort.Strings(cands)
	if len(cands) > 0 {
		room = total
	}
	return cands, room
}

// assign tries every assignment of siblings[i:] (each to a fitting node with capacity left,
// or to nowhere) and reports whether at least want siblings in total can be placed.
func assign(sibs []int, i, placed, want int, nodes []*Node, caps []int) bool {
	if placed >= want {
		return true
	}
	if placed+len(sibs)-i < want {
		return false
	}
	k := sibs[i]
	for j, n := range nodes {
		if caps[j] > 0 && k < len(n.Fits) && n.Fits[k] {
			caps[j]--
			ok := assign(sibs, i+1, placed+1, want, nodes, caps)
			caps[j]++
			if ok {
				return true
			}
		}
	}
	return assign(sibs, i+1, placed, want, nodes, caps)
}

// checkPlan verifies Plan's invariants and its agreement with the brute force; "" = OK.
func checkPlan(g *Gang, nodes []Node) string {
	plans := Plan(g, nodes)
	byDomain := map[string][]*Node{}
	names := map[string]*Node{}
	for i := range nodes {
		n := &nodes[i]
		names[n.Name] = n
		if n.Domain != "" {
			byDomain[n.Domain] = append(byDomain[n.Domain], n)
		}
	}
	if len(plans) != len(byDomain) {
		return fmt.Sprintf("plan has domains %v, want %d domains", slices.Sorted(maps.Keys(plans)), len(byDomain))
	}
	for d, ns := range byDomain {
		p := plans[d]
		if p == nil {
			return fmt.Sprintf("domain %q missing", d)
		}
		if p.Domain != d {
			return fmt.Sprintf("plan[%q].Domain = %q", d, p.Domain)
		}
		var wantNodes []string
		for _, n := range ns {
			wantNodes = append(wantNodes, n.Name)
		}
		sort.Strings(wantNodes)
		if !slices.Equal(p.Nodes, wantNodes) {
			return fmt.Sprintf("plan[%q].Nodes = %v, want %v", d, p.Nodes, wantNodes)
		}
		if (p.Room == 0) != (len(p.Candidates) == 0) {
			return fmt.Sprintf("plan[%q]: room %d with %d candidates", d, p.Room, len(p.Candidates))
		}
		if !sort.StringsAreSorted(p.Candidates) {
			return fmt.Sprintf("plan[%q].Candidates not sorted: %v", d, p.Candidates)
		}
		for _, c := range p.Candidates {
			n := names[c]
			if n == nil || n.Domain != d {
				return fmt.Sprintf("plan[%q]: candidate %q is not a node of the domain", d, c)
			}
			if g.Current >= len(n.Fits) || !n.Fits[g.Current] {
				return fmt.Sprintf("plan[%q]: candidate %q does not fit the current shape", d, c)
			}
			if NodeRoom(g, n) <= 0 {
				return fmt.Sprintf("plan[%q]: candidate %q has no room", d, c)
			}
		}
		bc, br := bruteDomain(g, ns)
		if !slices.Equal(p.Candidates, bc) {
			return fmt.Sprintf("plan[%q].Candidates = %v, brute force %v", d, p.Candidates, bc)
		}
		if p.Room != br {
			return fmt.Sprintf("plan[%q].Room = %d, brute force %d", d, p.Room, br)
		}
	}
	rooms := Rooms(plans)
	if msg := checkBestFit(rooms, g.Need); msg != "" {
		return msg
	}
	return ""
}

// checkBestFit verifies BestFit against its definition; "" = OK.
func checkBestFit(rooms map[string]int, size int) string {
	d, ok := BestFit(rooms, size)
	// reference: sort fitting domains by (room, name)
	var fit []string
	for k, r := range rooms {
		if size > 0 && r >= size {
			fit = append(fit, k)
		}
	}
	sort.Slice(fit, func(i, j int) bool {
		if rooms[fit[i]] != rooms[fit[j]] {
			return rooms[fit[i]] < rooms[fit[j]]
		}
		return fit[i] < fit[j]
	})
	if len(fit) == 0 {
		if ok || d != "" {
			return fmt.Sprintf("BestFit(%v,%d) = %q,true; want none", rooms, size, d)
		}
		return ""
	}
	if !ok || d != fit[0] {
		return fmt.Sprintf("BestFit(%v,%d) = %q,%v; want %q", rooms, size, d, ok, fit[0])
	}
	if rooms[d] < size {
		return fmt.Sprintf("BestFit(%v,%d) = %q with room %d < size", rooms, size, d, rooms[d])
	}
	if c := CountFitting(rooms, size); c != len(fit) {
		return fmt.Sprintf("CountFitting(%v,%d) = %d, want %d", rooms, size, c, len(fit))
	}
	return ""
}
