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
