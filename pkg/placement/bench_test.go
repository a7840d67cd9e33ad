package placement

import (
	"fmt"
	"testing"
)

// BenchmarkChooseDrainRelease is one gang's pin lifecycle against a store already holding
// 100 forming gangs over 625 domains.
func BenchmarkChooseDrainRelease(b *testing.B) {
	s := NewStore()
	rooms := map[string]int{}
	nodes := map[string][]string{}
	for d := 0; d < 625; d++ {
		v := fmt.Sprintf("d%04d", d)
		rooms[v] = 8
		for i := 0; i < 8; i++ {
			nodes[v] = append(nodes[v], fmt.Sprintf("%s-n%d", v, i))
		}
	}
	nodesOf := func(d string) []string { return nodes[d] }
	for g := 0; g < 100; g++ {
		s.Choose(ChooseRequest{Gang: fmt.Sprintf("ns/held-%d", g), Owner: "u", Key: "k", Need: 8, Rooms: rooms, Nodes: nodesOf})
	}
	b.ReportAllocs()
	for b.Loop() {
		r := s.Choose(ChooseRequest{Gang: "ns/g", Owner: "u", Key: "k", Need: 4, Rooms: rooms, Nodes: nodesOf})
		if !r.OK {
			b.Fatal("no pin")
		}
		for i := 0; i < 4; i++ {
			s.Drain("ns/g", r.Commitment.ID)
		}
		s.Release("ns/g", r.Commitment.ID, nil)
	}
}

// BenchmarkNodeHeld is the Filter barrier's lookup for a node outside every hold.
func BenchmarkNodeHeld(b *testing.B) {
	s := NewStore()
	for g := 0; g < 100; g++ {
		v := fmt.Sprintf("d%04d", g)
		s.Pin(PinRequest{Gang: fmt.Sprintf("ns/g%d", g), Owner: "u", Key: "k", Domain: v, Nodes: []string{v + "-n0", v + "-n1"}, Remaining: 2})
	}
	labels := map[string]string{"k": "free", "kubernetes.io/hostname": "x"}
	b.ReportAllocs()
	for b.Loop() {
		if _, held := s.NodeHeld("x", labels); held {
			b.Fatal("held")
		}
	}
}
