package topology

import (
	"testing"
)

// FuzzPlan decodes bytes into a tiny gang and node set (≤ 3 shapes, ≤ 6 siblings, ≤ 5 nodes)
// and checks Plan's invariants: every labelled domain appears with its sorted nodes; Room is
// 0 iff there are no candidates; every candidate is a node of its domain that fits the
// current shape with NodeRoom > 0; candidates and room agree with an exhaustive search over
// sibling assignments; BestFit over the rooms is the minimal fitting domain.
func FuzzPlan(f *testing.F) {
	seeds := [][]byte{
		{},
		{0},
		// one shape gpu1, current 0, one sibling, need 2, one node in "a" with 2 gpus
		{0, 1, 0, 0, 1, 1, 1, 0, 1, 3, 0, 4, 1},
		// three shapes, many siblings, apart, five nodes
		{2, 1, 0, 2, 1, 3, 2, 1, 3, 3, 3, 3, 4, 4, 1, 7, 5, 4, 7, 2, 7, 5, 3, 3, 3, 5, 1, 2, 5, 6, 4, 4, 5, 4},
		{1, 3, 2, 1, 1, 1, 0, 3, 3, 0, 4, 1, 8, 0, 4, 255, 2, 6, 3, 4, 9, 3, 1, 2, 2, 128},
		{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255},
		{2, 0, 0, 0, 0, 0, 0, 2, 3, 3, 0, 3, 3, 4, 1, 0, 0, 4, 7, 2, 7, 0, 4, 7, 2, 7, 0, 4, 7, 2, 7, 0, 4, 7, 2, 7},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, nodes := decodeInstance(data)
		for _, n := range nodes {
			if r := NodeRoom(&g, &n); r < 0 || r > max(g.Need, 1) {
				t.Fatalf("NodeRoom(%+v) = %d out of [0, need]", n, r)
			}
		}
		if msg := checkPlan(&g, nodes); msg != "" {
			t.Fatalf("%s\ngang=%+v\nnodes=%+v", msg, g, nodes)
		}
	})
}

// FuzzBestFit checks BestFit (and BestFitRanked / CountFitting / Largest) against their definitions on small
// random room maps, including zero and negative rooms and sizes.
func FuzzBestFit(f *testing.F) {
	f.Add([]byte{}, int8(4))
	f.Add([]byte{0, 18, 1, 6, 2, 4}, int8(4))
	f.Add([]byte{0, 18, 1, 5, 2, 2}, int8(4))
	f.Add([]byte{25, 6, 0, 6, 12, 6}, int8(4))
	f.Add([]byte{0, 3, 1, 1}, int8(1))
	f.Add([]byte{0, 18}, int8(18))
	f.Add([]byte{0, 18, 1, 4}, int8(0))
	f.Add([]byte{0, 18, 1, 4}, int8(-3))
	f.Add([]byte{3, 200, 4, 255, 5, 128}, int8(-1))
	f.Fuzz(func(t *testing.T, data []byte, size int8) {
		names := []string{"a", "b", "c", "ab", "B", "", "10", "9", "z", "zz", "a-1", "a.b"}
		rooms := map[string]int{}
		for i := 0; i+1 < len(data) && len(rooms) < 10; i += 2 {
			rooms[names[int(data[i])%len(names)]] = int(int8(data[i+1]))
		}
		if msg := checkBestFit(rooms, int(size)); msg != "" {
			t.Fatal(msg)
		}
		d, ok := BestFit(rooms, int(size))
		if ok != (size > 0 && CountFitting(rooms, int(size)) > 0) {
			t.Fatalf("BestFit ok=%v but CountFitting=%d size=%d", ok, CountFitting(rooms, int(size)), size)
		}
		if ok {
			for k, r := range rooms {
				if r >= int(size) && (r < rooms[d] || (r == rooms[d] && k < d)) {
					t.Fatalf("BestFit(%v,%d) = %q but %q is a better fit", rooms, size, d, k)
				}
			}
		}
		// BestFitRanked with a rank drawn from the input: same room as BestFit, minimal
		// (rank, name) among the domains with that room.
		rank := func(d string) int { return (len(d)*7 + int(size)) % 3 }
		rd, rok := BestFitRanked(rooms, int(size), rank)
		if rok != ok {
			t.Fatalf("BestFitRanked ok=%v, BestFit ok=%v", rok, ok)
		}
		if rok {
			if rooms[rd] != rooms[d] {
				t.Fatalf("BestFitRanked(%v,%d) = %q room %d; BestFit %q room %d", rooms, size, rd, rooms[rd], d, rooms[d])
			}
			for k, r := range rooms {
				if r == rooms[rd] && (rank(k) < rank(rd) || (rank(k) == rank(rd) && k < rd)) {
					t.Fatalf("BestFitRanked(%v,%d) = %q but %q ranks better", rooms, size, rd, k)
				}
			}
		} else if rd != "" {
			t.Fatalf("BestFitRanked returned %q without ok", rd)
		}
		if nd, nok := BestFitRanked(rooms, int(size), nil); nd != d || nok != ok {
			t.Fatalf("BestFitRanked(nil rank) = %q,%v; BestFit %q,%v", nd, nok, d, ok)
		}

		ld, lr, lok := Largest(rooms)
		if lok != (len(rooms) > 0) {
			t.Fatalf("Largest ok=%v for %d domains", lok, len(rooms))
		}
		if lok {
			if rooms[ld] != lr {
				t.Fatalf("Largest = %q,%d but rooms[%q] = %d", ld, lr, ld, rooms[ld])
			}
			for k, r := range rooms {
				if r > lr || (r == lr && k < ld) {
					t.Fatalf("Largest(%v) = %q,%d but %q,%d is larger", rooms, ld, lr, k, r)
				}
			}
		}
	})
}
