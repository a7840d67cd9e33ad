package topology

import (
	"fmt"
	"testing"
)

// benchCluster builds domains × nodesPer nodes with 8 GPUs each, some partly used.
func benchCluster(domains, nodesPer, shapes int) []Node {
	nodes := make([]Node, 0, domains*nodesPer)
	for d := 0; d < domains; d++ {
		for i := 0; i < nodesPer; i++ {
			fits := make([]bool, shapes)
			for s := range fits {
				fits[s] = (d+i+s)%7 != 0
			}
			nodes = append(nodes, Node{
				Name:     fmt.Sprintf("d%04d-n%02d", d, i),
				Domain:   fmt.Sprintf("d%04d", d),
				Free:     Resources{"nvidia.com/gpu": int64(8 - (d+i)%3), "cpu": 64000, "memory": 256 << 30},
				FreePods: 100,
				Fits:     fits,
			})
		}
	}
	return nodes
}

func benchGang(shapes, need int, apart bool) *Gang {
	g := &Gang{Need: need, Apart: apart}
	for s := 0; s < shapes; s++ {
		g.Shapes = append(g.Shapes, Resources{"nvidia.com/gpu": int64(1 + s), "cpu": 1000})
		g.Siblings = append(g.Siblings, 0)
	}
	for i := 1; i < need; i++ {
		g.Siblings[i%shapes]++
	}
	return g
}

// BenchmarkPlan measures planning a gang over a whole cluster: 1,000 nodes in cliques of 8.
func BenchmarkPlan(b *testing.B) {
	for _, tc := range []struct {
		name         string
		domains, per int
		shapes, need int
		apart        bool
	}{
		{"1000nodes/homogeneous-8-apart", 125, 8, 1, 8, true},
		{"1000nodes/homogeneous-4-shared", 125, 8, 1, 4, false},
		{"1000nodes/heterogeneous-3shapes-8", 125, 8, 3, 8, true},
		{"5000nodes/homogeneous-8-apart", 625, 8, 1, 8, true},
	} {
		nodes := benchCluster(tc.domains, tc.per, tc.shapes)
		g := benchGang(tc.shapes, tc.need, tc.apart)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plans := Plan(g, nodes)
				if len(plans) != tc.domains {
					b.Fatalf("%d plans", len(plans))
				}
			}
		})
	}
}

func BenchmarkBestFit(b *testing.B) {
	rooms := map[string]int{}
	for d := 0; d < 625; d++ {
		rooms[fmt.Sprintf("d%04d", d)] = 1 + d%9
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := BestFit(rooms, 8); !ok {
			b.Fatal("no fit")
		}
	}
}

// BenchmarkMinimalVictims measures one domain of 18 nodes × 4 GPUs, every GPU taken by 20
// lower-priority units: 6 two-member gangs (one 4-GPU member per node) on 12 nodes and 14
// standalone 1- or 2-GPU pods on the other 6 nodes (some with a PDB).
func BenchmarkMinimalVictims(b *testing.B) {
	nodes := make([]Node, 18)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("n%02d", i), Domain: "rack", Free: Resources{"nvidia.com/gpu": 0, "cpu": 32000},
			FreePods: 100, Fits: []bool{i%9 != 4}}
	}
	res := func(gpus int64) Resources { return Resources{"nvidia.com/gpu": gpus, "cpu": 1000 * gpus} }
	var units []VictimUnit
	for k := 0; k < 6; k++ {
		units = append(units, VictimUnit{Name: fmt.Sprintf("gang-%d", k), Priority: int32(k % 3), Pods: 2,
			Frees: map[string]NodeFree{
				nodes[2*k].Name:   {Resources: res(4), Pods: 1},
				nodes[2*k+1].Name: {Resources: res(4), Pods: 1},
			}})
	}
	// 14 pods fill nodes 12..17: 2+1+1 GPUs on nodes 12 and 13, 2+2 on the other four.
	used := make([]int64, 18)
	for j := 0; j < 14; j++ {
		n := 12 + j%6
		g := int64(2)
		if n <= 13 && used[n] >= 2 {
			g = 1
		}
		used[n] += g
		pdb := 0
		if j%5 == 0 {
			pdb = 1
		}
		units = append(units, VictimUnit{Name: fmt.Sprintf("pod-%02d", j), Priority: int32(j % 4), Pods: 1, PDBViolations: pdb,
			Frees: map[string]NodeFree{nodes[n].Name: {Resources: res(g), Pods: 1}}})
	}
	for i := 12; i < 18; i++ {
		if used[i] != 4 {
			b.Fatalf("node %d uses %d GPUs", i, used[i])
		}
	}
	shape := Resources{"nvidia.com/gpu": 4, "cpu": 4000}
	for _, tc := range []struct {
		name string
		gang Gang
	}{
		{"apart-4x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{3}, Need: 4, Apart: true}},
		{"shared-8x2gpu", Gang{Shapes: []Resources{{"nvidia.com/gpu": 2, "cpu": 2000}}, Siblings: []int{7}, Need: 8}},
		{"standalone-1x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{0}, Need: 1}},
		{"apart-16x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{15}, Need: 16, Apart: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := tc.gang
			if _, _, ok := MinimalVictims(&g, 10, nodes, units); !ok {
				b.Fatal("no room even with every unit evicted")
			}
			b.ReportAllocs()
			for b.Loop() {
				MinimalVictims(&g, 10, nodes, units)
			}
		})
	}
}

// benchGroupCluster builds zones × cliques × per nodes with 8 GPUs, some partly used; the
// group key is the zone, key 0 the clique, key 1 the zone.
func benchGroupCluster(zones, cliques, per, partners int) []GroupNode {
	var out []GroupNode
	for z := 0; z < zones; z++ {
		for c := 0; c < cliques; c++ {
			for i := 0; i < per; i++ {
				fits := make([][]bool, partners)
				for p := range fits {
					fits[p] = []bool{(z+c+i+p)%7 != 0, true}
				}
				zone := fmt.Sprintf("z%d", z)
				out = append(out, GroupNode{
					Name:     fmt.Sprintf("z%d-c%d-n%02d", z, c, i),
					Group:    zone,
					Sub:      []string{fmt.Sprintf("z%d-c%d", z, c), zone},
					Free:     Resources{"gpu": int64(8 - (z+c+i)%5), "cpu": 64000},
					FreePods: 100,
					Fits:     fits,
				})
			}
		}
	}
	return out
}

// BenchmarkPlanGroup: 4 zones × 4 cliques × 18 nodes (288 nodes), 2 or 3 partners.
func BenchmarkPlanGroup(b *testing.B) {
	two := func(need int, apart bool) *Gang {
		return &Gang{Shapes: []Resources{{"gpu": 8, "cpu": 1000}, {"gpu": 4, "cpu": 1000}}, Siblings: []int{need - 1, 0}, Need: need, Apart: apart}
	}
	for _, tc := range []struct {
		name     string
		partners []Partner
	}{
		{"2partners-clique-16-apart", []Partner{{two(16, true), 0}, {two(16, true), 0}}},
		{"3partners-clique-8-8-zone-16", []Partner{{two(8, true), 0}, {two(8, true), 0}, {pg(16, Resources{"gpu": 2}, false), 1}}},
		{"3partners-infeasible-clique-18-apart", []Partner{{two(18, true), 0}, {two(18, true), 0}, {two(18, true), 0}}},
	} {
		nodes := benchGroupCluster(4, 4, 18, len(tc.partners))
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if plans := PlanGroup(tc.partners, nodes); len(plans) != 4 {
					b.Fatalf("%d plans", len(plans))
				}
			}
		})
	}
}
