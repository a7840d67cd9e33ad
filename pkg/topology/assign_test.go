package topology

import (
	"reflect"
	"testing"
)

func TestAssign(t *testing.T) {
	gpu := func(n int64) Resources { return Resources{"gpu": n} }
	node := func(name string, free int64, fits ...bool) Node {
		return Node{Name: name, Domain: "d", Free: gpu(free), FreePods: 110, Fits: fits}
	}
	tests := []struct {
		name      string
		g         Gang
		nodes     []Node
		want      int
		wantMap   map[string]int
		wantTotal int
	}{
		{"nothing wanted", Gang{Shapes: []Resources{gpu(1)}, Need: 2, Siblings: []int{1}},
			[]Node{node("n0", 8, true)}, 0, map[string]int{}, 0},
		{"two small members share a node", Gang{Shapes: []Resources{gpu(1)}, Need: 2, Siblings: []int{1}},
			[]Node{node("n1", 8, true), node("n0", 8, true)}, 2, map[string]int{"n0": 2}, 2},
		{"apart members go one per node, in name order", Gang{Shapes: []Resources{gpu(1)}, Need: 3, Siblings: []int{2}, Apart: true},
			[]Node{node("n2", 8, true), node("n0", 8, true), node("n1", 8, true), node("n3", 8, true)}, 3,
			map[string]int{"n0": 1, "n1": 1, "n2": 1}, 3},
		{"one node's room is one copy of the largest fitting shape", Gang{Shapes: []Resources{gpu(4)}, Need: 4, Siblings: []int{3}},
			[]Node{node("a", 8, true), node("b", 4, true), node("c", 2, false)}, 4, map[string]int{"a": 2, "b": 1}, 3},
		{"a constrained sibling keeps the only node it fits", Gang{Shapes: []Resources{gpu(1), gpu(1)}, Current: 0, Siblings: []int{0, 1}, Need: 2, Apart: true},
			[]Node{node("a", 8, true, true), node("b", 8, true, false)}, 2, map[string]int{"a": 1, "b": 1}, 2},
		{"surplus siblings are not reserved", Gang{Shapes: []Resources{gpu(8)}, Need: 2, Siblings: []int{5}},
			[]Node{node("a", 8, true), node("b", 8, true), node("c", 8, true)}, 2, map[string]int{"a": 1, "b": 1}, 2},
		{"no node fits", Gang{Shapes: []Resources{gpu(8)}, Need: 1},
			[]Node{node("a", 4, false)}, 1, map[string]int{}, 0},
		{"no shapes", Gang{Need: 1}, []Node{node("a", 4)}, 1, map[string]int{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, total := Assign(&tc.g, tc.nodes, tc.want)
			if !reflect.DeepEqual(got, tc.wantMap) || total != tc.wantTotal {
				t.Fatalf("Assign = %v, %d; want %v, %d", got, total, tc.wantMap, tc.wantTotal)
			}
		})
	}
}

// FuzzAssign checks Assign on small instances: no node takes more than its NodeRoom or a
// member no shape of the gang fits, the counts add up to the total, the total is the most
// members (at most need) an exhaustive search can place, and a domain where Plan says the
// gang can form gets all need members.
func FuzzAssign(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 1, 1, 1, 0, 1, 3, 0, 4, 1})
	f.Add([]byte{2, 1, 0, 2, 1, 3, 2, 1, 3, 3, 3, 3, 4, 4, 1, 7, 5, 4, 7, 2, 7, 5, 3, 3, 3, 5, 1, 2, 5, 6, 4, 4, 5, 4})
	f.Add([]byte{1, 3, 2, 1, 1, 1, 0, 3, 3, 0, 4, 1, 8, 0, 4, 255, 2, 6, 3, 4, 9, 3, 1, 2, 2, 128})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, nodes := decodeInstance(data)
		plans := Plan(&g, nodes)
		for d, p := range plans {
			var dom []Node
			for _, n := range nodes {
				if n.Domain == d {
					dom = append(dom, n)
				}
			}
			counts, total := Assign(&g, dom, g.Need)
			sum := 0
			for _, n := range dom {
				k := counts[n.Name]
				sum += k
				if k > NodeRoom(&g, &n) {
					t.Fatalf("node %s takes %d > room %d", n.Name, k, NodeRoom(&g, &n))
				}
			}
			if sum != total || total > g.Need {
				t.Fatalf("counts %v sum %d, total %d, need %d", counts, sum, total, g.Need)
			}
			if best := bruteAssign(&g, dom); total != min(best, g.Need) {
				t.Fatalf("Assign total %d, exhaustive best %d (need %d)\ngang=%+v\nnodes=%+v", total, best, g.Need, g, dom)
			}
			if len(p.Candidates) > 0 && total != g.Need {
				t.Fatalf("gang can form in %s but Assign placed %d of %d", d, total, g.Need)
			}
		}
	})
}

// bruteAssign returns the most members (the current one and its siblings) that can be put on
// nodes they fit without exceeding any node's NodeRoom, by exhaustive search.
func bruteAssign(g *Gang, nodes []Node) int {
	var units []int
	for s := range g.Shapes {
		for k := shapeMembers(g, s); k > 0; k-- {
			units = append(units, s)
		}
	}
	room := make([]int, len(nodes))
	for i := range nodes {
		room[i] = NodeRoom(g, &nodes[i])
	}
	var best int
	var dfs func(i, placed int)
	dfs = func(i, placed int) {
		best = max(best, placed)
		if i == len(units) {
			return
		}
		dfs(i+1, placed) // the unit stays unplaced
		for j := range nodes {
			if room[j] > 0 && units[i] < len(nodes[j].Fits) && nodes[j].Fits[units[i]] {
				room[j]--
				dfs(i+1, placed+1)
				room[j]++
			}
		}
	}
	dfs(0, 0)
	return best
}
