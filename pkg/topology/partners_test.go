package topology

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// gn builds a GroupNode whose partner keys are subs (Sub[k] = subs[k]); fits is per partner.
func gn(name, group string, subs []string, free Resources, pods int64, fits ...[]bool) GroupNode {
	return GroupNode{Name: name, Group: group, Sub: subs, Free: free, FreePods: pods, Fits: fits}
}

// pg is a one-shape partner gang of need members.
func pg(need int, shape Resources, apart bool) *Gang {
	return &Gang{Shapes: []Resources{shape}, Siblings: []int{need - 1}, Need: need, Apart: apart}
}

var yes, no = []bool{true}, []bool{false}

// cliqueNodes lists count nodes of a clique (group key = partner key = the clique), each
// with free and fitting every one of partners one-shape partners.
func cliqueNodes(clique string, count int, free Resources, partners int) []GroupNode {
	var out []GroupNode
	for i := 0; i < count; i++ {
		fits := make([][]bool, partners)
		for p := range fits {
			fits[p] = yes
		}
		out = append(out, gn(fmt.Sprintf("%s-%d", clique, i), clique, []string{clique}, free, 110, fits...))
	}
	return out
}

func concat(parts ...[]GroupNode) []GroupNode {
	var out []GroupNode
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type groupWant struct {
	feasible bool
	sub      []string
	nodes    [][]string
	room     int
	need     int
	holds    int
}

func checkGroupPlan(t *testing.T, partners []Partner, nodes []GroupNode, plans map[string]*GroupPlan, want map[string]groupWant) {
	t.Helper()
	if len(plans) != len(want) {
		t.Fatalf("plans for %d domains %v, want %d", len(plans), slices.Sorted(maps.Keys(plans)), len(want))
	}
	for d, w := range want {
		p := plans[d]
		if p == nil {
			t.Fatalf("no plan for %q", d)
		}
		got := groupWant{p.Feasible, p.Sub, p.Nodes, p.Room, p.Need, p.Holds}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("plan[%q] = %+v\nwant        %+v", d, got, w)
		}
		if msg := checkWitness(partners, nodes, p); msg != "" {
			t.Errorf("plan[%q]: %s", d, msg)
		}
	}
}

func TestPlanGroup(t *testing.T) {
	one := gpu(1)
	cases := []struct {
		name     string
		partners []Partner
		nodes    []GroupNode
		want     map[string]groupWant
		best     string // "" = none feasible
		largest  string
		holds    int
	}{
		{
			// G1: alone, each partner would best-fit the 2-node clique; together only the
			// 4-node clique holds both.
			name:     "G1 two partners of two in cliques of 4, 2 and 3 one-slot nodes",
			partners: []Partner{{pg(2, one, false), 0}, {pg(2, one, false), 0}},
			nodes:    concat(cliqueNodes("c4", 4, one, 2), cliqueNodes("c2", 2, one, 2), cliqueNodes("c3", 3, one, 2)),
			want: map[string]groupWant{
				"c4": {true, []string{"c4", "c4"}, [][]string{{"c4-0", "c4-1", "c4-2", "c4-3"}, {"c4-0", "c4-1", "c4-2", "c4-3"}}, 8, 4, 4},
				"c2": {need: 4, holds: 2},
				"c3": {need: 4, holds: 3},
			},
			best: "c4", largest: "c4", holds: 4,
		},
		{
			name:     "G3 two partners of two in 3-node cliques: no group domain",
			partners: []Partner{{pg(2, one, false), 0}, {pg(2, one, false), 0}},
			nodes:    concat(cliqueNodes("a", 3, one, 2), cliqueNodes("b", 3, one, 2)),
			want: map[string]groupWant{
				"a": {need: 4, holds: 3},
				"b": {need: 4, holds: 3},
			},
			largest: "a", holds: 3,
		},
		{
			// G4: group key zone, partner key clique. z1 has two cliques with room: one
			// partner in each. z2's single clique of 3 cannot take both; z3's second clique
			// is too small for either.
			name: "G4 zone group, clique partners, different shapes",
			partners: []Partner{
				{pg(2, gpu(8), true), 0}, // two whole nodes, one per node
				{pg(4, gpu(4), false), 0},
			},
			nodes: []GroupNode{
				gn("a1", "z1", []string{"a"}, gpu(8), 110, yes, yes),
				gn("a2", "z1", []string{"a"}, gpu(8), 110, yes, yes),
				gn("b1", "z1", []string{"b"}, gpu(8), 110, yes, yes),
				gn("b2", "z1", []string{"b"}, gpu(8), 110, yes, yes),
				gn("c1", "z2", []string{"c"}, gpu(8), 110, yes, yes),
				gn("c2", "z2", []string{"c"}, gpu(8), 110, yes, yes),
				gn("c3", "z2", []string{"c"}, gpu(8), 110, yes, yes),
				gn("d1", "z3", []string{"d"}, gpu(8), 110, yes, yes),
				gn("d2", "z3", []string{"d"}, gpu(8), 110, yes, yes),
				gn("e1", "z3", []string{"e"}, gpu(8), 110, yes, yes),
			},
			want: map[string]groupWant{
				// tie on Room (2+4 either way): the smaller Sub vector [a b]
				"z1": {true, []string{"a", "b"}, [][]string{{"a1", "a2"}, {"b1", "b2"}}, 6, 6, 6},
				// best: the 4-GPU partner whole on two nodes, one apart member on the third
				"z2": {need: 6, holds: 5},
				// the 4-GPU partner whole in d, one apart member in e
				"z3": {need: 6, holds: 5},
			},
			best: "z1", largest: "z1", holds: 6,
		},
		{
			name:     "G4 tightest clique per partner within the zone",
			partners: []Partner{{pg(2, one, false), 0}, {pg(2, one, false), 0}},
			nodes: concat(
				[]GroupNode{
					gn("a1", "z", []string{"a"}, one, 110, yes, yes),
					gn("a2", "z", []string{"a"}, one, 110, yes, yes),
					gn("a3", "z", []string{"a"}, one, 110, yes, yes),
					gn("b1", "z", []string{"b"}, one, 110, yes, yes),
					gn("b2", "z", []string{"b"}, one, 110, yes, yes),
				}),
			// [b b] does not fit (2 slots); [a b] / [b a] have Room 3+2: [a b] by name; [a a]
			// would be Room 6.
			want: map[string]groupWant{
				"z": {true, []string{"a", "b"}, [][]string{{"a1", "a2", "a3"}, {"b1", "b2"}}, 5, 4, 4},
			},
			best: "z", largest: "z", holds: 4,
		},
		{
			name:     "partners never count the same GPUs: 6 + 4 on one 8-GPU node does not fit",
			partners: []Partner{{pg(1, gpu(6), false), 0}, {pg(1, gpu(4), false), 0}},
			nodes: []GroupNode{
				gn("one", "solo", []string{"solo"}, gpu(8), 110, yes, yes),
				gn("p1", "pair", []string{"pair"}, gpu(8), 110, yes, yes),
				gn("p2", "pair", []string{"pair"}, gpu(8), 110, yes, yes),
			},
			want: map[string]groupWant{
				"solo": {need: 2, holds: 1},
				"pair": {true, []string{"pair", "pair"}, [][]string{{"p1", "p2"}, {"p1", "p2"}}, 4, 2, 2},
			},
			best: "pair", largest: "pair", holds: 2,
		},
		{
			name:     "two partners share an 8-GPU node when 4 + 4 fit",
			partners: []Partner{{pg(1, gpu(4), false), 0}, {pg(1, gpu(4), false), 0}},
			nodes:    []GroupNode{gn("n", "d", []string{"d"}, gpu(8), 110, yes, yes)},
			want:     map[string]groupWant{"d": {true, []string{"d", "d"}, [][]string{{"n"}, {"n"}}, 2, 2, 2}},
			best:     "d", largest: "d", holds: 2,
		},
		{
			name:     "shared node: pod slots count too",
			partners: []Partner{{pg(1, gpu(4), false), 0}, {pg(1, gpu(4), false), 0}},
			nodes:    []GroupNode{gn("n", "d", []string{"d"}, gpu(8), 1, yes, yes)},
			want:     map[string]groupWant{"d": {need: 2, holds: 1}},
			largest:  "d", holds: 1,
		},
		{
			name: "shared node: a resource only one partner requests is still counted",
			partners: []Partner{
				{pg(1, Resources{"gpu": 1, "cpu": 6}, false), 0},
				{pg(1, Resources{"gpu": 1}, false), 0},
				{pg(1, Resources{"cpu": 6}, false), 0},
			},
			nodes: []GroupNode{
				gn("n", "d", []string{"d"}, Resources{"gpu": 8, "cpu": 10}, 110, yes, yes, yes),
				gn("m", "d", []string{"d"}, Resources{"gpu": 0, "cpu": 4}, 110, no, no, no),
			},
			want:    map[string]groupWant{"d": {need: 3, holds: 2}},
			largest: "d", holds: 2,
		},
		{
			// the bigger member needs the bigger node: only the order big-first works when
			// the small member would otherwise take the first node by name
			name:     "order matters: the 8-GPU member needs the 8-GPU node",
			partners: []Partner{{pg(1, gpu(4), false), 0}, {pg(1, gpu(8), false), 0}},
			nodes: []GroupNode{
				gn("n1", "d", []string{"d"}, gpu(8), 110, yes, yes),
				gn("n2", "d", []string{"d"}, gpu(4), 110, yes, no),
			},
			want: map[string]groupWant{"d": {true, []string{"d", "d"}, [][]string{{"n2"}, {"n1"}}, 3, 2, 2}},
			best: "d", largest: "d", holds: 2,
		},
		{
			// A takes a whole node; B and C (apart) must then both spread over the other
			// two nodes: B first would pack both members on one node and leave C one node.
			name: "three partners, one apart",
			partners: []Partner{
				{pg(1, gpu(8), false), 0},
				{pg(2, gpu(4), false), 0},
				{pg(2, gpu(4), true), 0},
			},
			nodes: []GroupNode{
				gn("n1", "d", []string{"d"}, gpu(8), 110, yes, yes, yes),
				gn("n2", "d", []string{"d"}, gpu(8), 110, yes, yes, yes),
				gn("n3", "d", []string{"d"}, gpu(8), 110, yes, yes, yes),
			},
			want: map[string]groupWant{"d": {true, []string{"d", "d", "d"},
				[][]string{{"n1", "n2", "n3"}, {"n1", "n2", "n3"}, {"n1", "n2", "n3"}}, 3 + 6 + 3, 5, 5}},
			best: "d", largest: "d", holds: 5,
		},
		{
			name:     "apart applies within a partner: two apart partners share two nodes",
			partners: []Partner{{pg(2, gpu(4), true), 0}, {pg(2, gpu(4), true), 0}},
			nodes: []GroupNode{
				gn("n1", "d", []string{"d"}, gpu(8), 110, yes, yes),
				gn("n2", "d", []string{"d"}, gpu(8), 110, yes, yes),
			},
			want: map[string]groupWant{"d": {true, []string{"d", "d"}, [][]string{{"n1", "n2"}, {"n1", "n2"}}, 4, 4, 4}},
			best: "d", largest: "d", holds: 4,
		},
		{
			name:     "apart partner cannot double up on a node",
			partners: []Partner{{pg(2, gpu(1), true), 0}, {pg(1, gpu(1), false), 0}},
			nodes:    []GroupNode{gn("n1", "d", []string{"d"}, gpu(8), 110, yes, yes)},
			want:     map[string]groupWant{"d": {need: 3, holds: 2}},
			largest:  "d", holds: 2,
		},
		{
			// partner 0 keyed by rack (key 0), partner 1 by the zone itself (key 1); nodes
			// without a rack are for partner 1 only; Fits are per partner.
			name:     "mixed keys, per-partner fits, nodes outside a partner's key",
			partners: []Partner{{pg(2, one, false), 0}, {pg(3, one, false), 1}},
			nodes: []GroupNode{
				gn("r1a", "z", []string{"r1", "z"}, one, 110, yes, yes),
				gn("r1b", "z", []string{"r1", "z"}, one, 110, yes, no),
				gn("r2a", "z", []string{"r2", "z"}, one, 110, yes, yes),
				gn("x1", "z", []string{"", "z"}, one, 110, yes, yes),
				gn("x2", "z", []string{"", "z"}, one, 110, yes, yes),
				gn("none", "", []string{"r1", "z"}, one, 110, yes, yes),
			},
			// partner 0 can only use rack r1 (2 nodes); partner 1 the other three
			want: map[string]groupWant{"z": {true, []string{"r1", "z"}, [][]string{{"r1a", "r1b"}, {"r2a", "x1", "x2"}}, 2 + 4, 5, 5}},
			best: "z", largest: "z", holds: 5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plans := PlanGroup(tc.partners, tc.nodes)
			checkGroupPlan(t, tc.partners, tc.nodes, plans, tc.want)
			best, ok := BestGroupFit(plans)
			if best != tc.best || ok != (tc.best != "") {
				t.Errorf("BestGroupFit = %q,%v, want %q", best, ok, tc.best)
			}
			d, h, need, ok := LargestGroup(plans)
			if !ok || d != tc.largest || h != tc.holds || need != plans[d].Need {
				t.Errorf("LargestGroup = %q,%d,%d,%v, want %q,%d", d, h, need, ok, tc.largest, tc.holds)
			}
		})
	}
}

// TestPlanGroupG1AloneVsTogether shows why G1 needs group planning: each partner alone
// best-fits the 2-node clique.
func TestPlanGroupG1AloneVsTogether(t *testing.T) {
	var nodes []Node
	for _, c := range []struct {
		name string
		n    int
	}{{"c4", 4}, {"c2", 2}, {"c3", 3}} {
		for i := 0; i < c.n; i++ {
			nodes = append(nodes, nd(fmt.Sprintf("%s-%d", c.name, i), c.name, gpu(1), 110, true))
		}
	}
	g := pg(2, gpu(1), false)
	if d, ok := BestFit(Rooms(Plan(g, nodes)), g.Need); !ok || d != "c2" {
		t.Fatalf("alone BestFit = %q,%v, want c2", d, ok)
	}
	gnodes := concat(cliqueNodes("c4", 4, gpu(1), 2), cliqueNodes("c2", 2, gpu(1), 2), cliqueNodes("c3", 3, gpu(1), 2))
	if d, ok := BestGroupFit(PlanGroup([]Partner{{g, 0}, {g, 0}}, gnodes)); !ok || d != "c4" {
		t.Fatalf("group BestGroupFit = %q,%v, want c4", d, ok)
	}
}

func TestPlanGroupEdges(t *testing.T) {
	if p := PlanGroup(nil, cliqueNodes("a", 2, gpu(1), 0)); p != nil {
		t.Errorf("no partners: %v", p)
	}
	if _, ok := BestGroupFit(nil); ok {
		t.Error("BestGroupFit(nil) ok")
	}
	if _, _, _, ok := LargestGroup(nil); ok {
		t.Error("LargestGroup(nil) ok")
	}
	// Need 0 counts as 1 (the current member), as in Plan; a Key out of range or fits
	// missing for a partner leave it nowhere to go.
	g0 := &Gang{Shapes: []Resources{gpu(1)}, Siblings: []int{0}, Need: 0}
	plans := PlanGroup([]Partner{{g0, 0}, {g0, 0}}, cliqueNodes("a", 2, gpu(1), 2))
	if p := plans["a"]; !p.Feasible || p.Need != 2 || p.Holds != 2 {
		t.Errorf("need 0: %+v", p)
	}
	plans = PlanGroup([]Partner{{g0, 0}, {g0, 5}}, cliqueNodes("a", 2, gpu(1), 2))
	if p := plans["a"]; p.Feasible || p.Holds != 1 {
		t.Errorf("key out of range: %+v", p)
	}
	plans = PlanGroup([]Partner{{g0, 0}, {g0, 0}}, cliqueNodes("a", 2, gpu(1), 1))
	if p := plans["a"]; p.Feasible || p.Holds != 1 {
		t.Errorf("fits missing for partner 1: %+v", p)
	}
	// inputs are not modified
	nodes := cliqueNodes("a", 2, gpu(1), 2)
	before := fmt.Sprintf("%+v", nodes)
	PlanGroup([]Partner{{pg(1, gpu(1), false), 0}, {pg(1, gpu(1), false), 0}}, nodes)
	if after := fmt.Sprintf("%+v", nodes); after != before {
		t.Errorf("nodes modified:\n%s\n%s", before, after)
	}
}

func TestBestGroupFitAndLargestGroup(t *testing.T) {
	plans := map[string]*GroupPlan{
		"a": {Domain: "a", Feasible: true, Room: 9, Need: 4, Holds: 4},
		"b": {Domain: "b", Feasible: true, Room: 6, Need: 4, Holds: 4},
		"c": {Domain: "c", Feasible: true, Room: 6, Need: 4, Holds: 4},
		"d": {Domain: "d", Room: 0, Need: 4, Holds: 3},
	}
	if d, ok := BestGroupFit(plans); !ok || d != "b" {
		t.Errorf("BestGroupFit = %q,%v, want b", d, ok)
	}
	if d, h, n, ok := LargestGroup(plans); !ok || d != "a" || h != 4 || n != 4 {
		t.Errorf("LargestGroup = %q,%d,%d,%v", d, h, n, ok)
	}
	delete(plans, "a")
	delete(plans, "b")
	delete(plans, "c")
	if _, ok := BestGroupFit(plans); ok {
		t.Error("BestGroupFit with none feasible")
	}
	if d, h, n, ok := LargestGroup(plans); !ok || d != "d" || h != 3 || n != 4 {
		t.Errorf("LargestGroup = %q,%d,%d,%v", d, h, n, ok)
	}
}

func TestGroupPlanMembers(t *testing.T) {
	g := pg(2, gpu(1), false)
	nodes := cliqueNodes("c", 2, gpu(2), 2) // two nodes of 2 GPUs: two partners of 2 fill them
	plans := PlanGroup([]Partner{{g, 0}, {g, 0}}, nodes)
	p := plans["c"]
	if p == nil || !p.Feasible {
		t.Fatalf("plan = %+v, want feasible", p)
	}
	total := map[string]int{}
	for i := 0; i < 2; i++ {
		n := 0
		for node, k := range p.Members(i) {
			n += k
			total[node] += k
		}
		if n != 2 {
			t.Errorf("partner %d: %d members in the witness, want 2 (%v)", i, n, p.Members(i))
		}
	}
	for node, k := range total {
		if k > 2 {
			t.Errorf("node %s holds %d members, has room for 2", node, k)
		}
	}
	if p.Members(-1) != nil || p.Members(5) != nil {
		t.Errorf("out of range partner: want nil")
	}
	var nilPlan *GroupPlan
	if nilPlan.Members(0) != nil {
		t.Errorf("nil plan: want nil")
	}
}
