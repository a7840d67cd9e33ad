package placement

import (
	"fmt"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// benchCluster is 625 domains of 8 nodes, each node with 8 GPUs and 8 pod slots.
func benchCluster() (rooms map[string]int, reserve func(need int) func(string) Reservation, capacity Capacity) {
	rooms = map[string]int{}
	nodes := map[string][]string{}
	for d := 0; d < 625; d++ {
		v := fmt.Sprintf("d%04d", d)
		rooms[v] = 8
		for i := 0; i < 8; i++ {
			nodes[v] = append(nodes[v], fmt.Sprintf("%s-n%d", v, i))
		}
	}
	each := topology.Resources{"nvidia.com/gpu": 1}
	reserve = func(need int) func(string) Reservation {
		return func(d string) Reservation {
			res := make(Reservation, need)
			for i := 0; i < need; i++ {
				res[nodes[d][i%len(nodes[d])]] = Slot{Count: 1, Each: each}
			}
			return res
		}
	}
	free := topology.Resources{"nvidia.com/gpu": 8}
	capacity = func(string) (topology.Resources, int64, bool) { return free, 8, true }
	return rooms, reserve, capacity
}

// BenchmarkChooseDrainRelease is one gang's pin lifecycle against a store already holding
// 100 forming gangs, each reserving one member on every node of its domain, over 625 domains.
func BenchmarkChooseDrainRelease(b *testing.B) {
	s := NewStore()
	rooms, reserve, capacity := benchCluster()
	for g := 0; g < 100; g++ {
		v := fmt.Sprintf("d%04d", g)
		s.Pin(PinRequest{Gang: fmt.Sprintf("ns/held-%d", g), Owner: "u", Key: "k", Domain: v, Reserved: reserve(8)(v),
			Capacity: capacity, Remaining: 8})
		rooms[v] = 0 // counted outside the other gangs' reservations
	}
	b.ReportAllocs()
	for b.Loop() {
		r := s.Choose(ChooseRequest{Gang: "ns/g", Owner: "u", Key: "k", Need: 4, Rooms: rooms, Reserve: reserve(4), Capacity: capacity})
		if !r.OK {
			b.Fatal("no pin")
		}
		for n := range r.Commitment.Reserved {
			s.Drain("ns/g", r.Commitment.ID, n)
		}
		s.Release("ns/g", r.Commitment.ID, nil)
	}
}

// BenchmarkReservedOn is Filter's lookup, for a node outside every reservation and for a
// node where three gangs reserve, while 100 gangs form.
func BenchmarkReservedOn(b *testing.B) {
	s := NewStore()
	each := topology.Resources{"nvidia.com/gpu": 1}
	for g := 0; g < 100; g++ {
		v := fmt.Sprintf("d%04d", g)
		res := Reservation{v + "-n0": {Count: 1, Each: each}, v + "-n1": {Count: 1, Each: each}}
		if g < 3 {
			res["shared"] = Slot{Count: 1, Each: each}
		}
		capacity := func(string) (topology.Resources, int64, bool) {
			return topology.Resources{"nvidia.com/gpu": 8}, 8, true
		}
		s.Pin(PinRequest{Gang: fmt.Sprintf("ns/g%d", g), Owner: "u", Key: "k", Domain: v, Reserved: res, Capacity: capacity, Remaining: 3})
	}
	b.Run("free", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := s.ReservedOn("x", ""); len(r.Gangs) != 0 {
				b.Fatal("reserved")
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := s.ReservedOn("shared", "ns/g0"); len(r.Gangs) != 2 {
				b.Fatal("not reserved")
			}
		}
	})
}
