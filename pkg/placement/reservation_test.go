package placement_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// eightNodes is one domain "d" of eight nodes d0..d7, and three nodes e0..e2 of another
// domain, with room for one 8-GPU member each.
func eightNodes() (cluster, []string) {
	var names []string
	for i := 0; i < 8; i++ {
		names = append(names, fmt.Sprintf("d%d", i))
	}
	return uniform(8, 110, append(append([]string(nil), names...), "e0", "e1", "e2")...), names
}

// TestTwoGangsShareADomain: two gangs of 4 reserve one member per node in one 8-node domain
// and both pin; a third gang of 4 does not fit anywhere in it, whichever nodes it asks for.
func TestTwoGangsShareADomain(t *testing.T) {
	c, d := eightNodes()
	cases := []struct {
		name  string
		nodes []string // the third gang's reservation (one member each)
		rooms int      // the room the third gang's planning counted
		want  string   // "conflict" (Conflict / HeldByOther) or "no fit" (Choose finds no domain)
	}{
		{"on A's nodes, stale room", d[0:4], 8, "conflict"},
		{"on B's nodes, stale room", d[4:8], 8, "conflict"},
		{"across both, stale room", d[2:6], 8, "conflict"},
		{"one node of A's among free ones", []string{d[0], "e0", "e1", "e2"}, 8, "conflict"},
		{"room counted outside the reservations", nil, 0, "no fit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			each := func(nodes []string) func(string) placement.Reservation {
				return func(string) placement.Reservation { return slots(1, 8, nodes...) }
			}
			a := s.Choose(placement.ChooseRequest{Gang: "ns/a", Owner: "u", Key: "k", Need: 4, Rooms: map[string]int{"d": 8},
				Reserve: each(d[0:4]), Capacity: c.capacity()})
			b := s.Choose(placement.ChooseRequest{Gang: "ns/b", Owner: "u", Key: "k", Need: 4, Rooms: map[string]int{"d": 4},
				Reserve: each(d[4:8]), Capacity: c.capacity()})
			if !a.OK || !b.OK || a.Commitment.Domain != "d" || b.Commitment.Domain != "d" {
				t.Fatalf("A = %+v, B = %+v; want both pinned on d", a, b)
			}
			if s.HeldDomains() != 1 {
				t.Fatalf("HeldDomains = %d, want 1 (two gangs in one domain)", s.HeldDomains())
			}
			for i, n := range d {
				want := []string{"ns/a"}
				if i >= 4 {
					want = []string{"ns/b"}
				}
				if r := s.ReservedOn(n, ""); !reflect.DeepEqual(r.Gangs, want) || r.Pods != 1 || r.Resources[gpu] != 8 {
					t.Fatalf("ReservedOn(%s) = %+v; want one 8-GPU slot of %v", n, r, want)
				}
			}
			gen := s.Generation()
			res := s.Choose(placement.ChooseRequest{Gang: "ns/c", Owner: "u", Key: "k", Need: 4, Rooms: map[string]int{"d": tc.rooms},
				Reserve: each(tc.nodes), Capacity: c.capacity()})
			switch tc.want {
			case "conflict":
				if res.OK || !res.Conflict {
					t.Fatalf("Choose C = %+v; want Conflict", res)
				}
				if _, out := s.Pin(placement.PinRequest{Gang: "ns/c", Owner: "u", Key: "k", Domain: "d",
					Reserved: slots(1, 8, tc.nodes...), Capacity: c.capacity(), Remaining: 4}); out != placement.HeldByOther {
					t.Fatalf("Pin C = %v; want HeldByOther", out)
				}
			case "no fit":
				if res.OK || res.Conflict || res.Existing {
					t.Fatalf("Choose C = %+v; want no fitting domain", res)
				}
			}
			if _, ok := s.Get("ns/c"); ok || s.Len() != 2 || s.Generation() != gen {
				t.Fatalf("refusing C changed the store: len %d generation %d→%d", s.Len(), gen, s.Generation())
			}
		})
	}
}

// TestReservationFits: a reservation fits when, on each of its nodes, it and every other
// gang's reservation together stay within the node's free resources (Count × Each) and free
// pod slots. Choose, Pin and Reserve apply the same rule.
func TestReservationFits(t *testing.T) {
	capacity := cluster{
		"x": {free: topology.Resources{gpu: 8, cpu: 4}, pods: 4},
		"y": {free: topology.Resources{gpu: 8, cpu: 4}, pods: 4},
		"z": {free: topology.Resources{gpu: 8}, pods: 2},
	}.capacity()
	one := func(node string, count int, each topology.Resources) placement.Reservation {
		return placement.Reservation{node: {Count: count, Each: each}}
	}
	cases := []struct {
		name     string
		res      placement.Reservation
		capacity placement.Capacity
		fits     bool
	}{
		{"1 GPU where A holds all 8", one("x", 1, topology.Resources{gpu: 1}), capacity, false},
		{"1 GPU on another node", one("y", 1, topology.Resources{gpu: 1}), capacity, true},
		{"8 GPUs on another node", one("y", 2, topology.Resources{gpu: 4}), capacity, true},
		{"9 GPUs on another node", one("y", 3, topology.Resources{gpu: 3}), capacity, false},
		{"CPU only next to A's GPUs", one("x", 1, topology.Resources{cpu: 4}), capacity, true},
		{"more CPU than free", one("x", 1, topology.Resources{cpu: 5}), capacity, false},
		{"the pod slots A leaves", one("x", 2, nil), capacity, true},
		{"one pod slot more than A leaves", one("x", 3, nil), capacity, false},
		{"all pod slots of a node without CPU", one("z", 2, nil), capacity, true},
		{"a pod slot too many", one("z", 3, nil), capacity, false},
		{"a resource the node lacks", one("z", 1, topology.Resources{cpu: 1}), capacity, false},
		{"a zero quantity is no request", one("z", 1, topology.Resources{cpu: 0}), capacity, true},
		{"one node fits, another does not", placement.Reservation{"y": {Count: 1, Each: topology.Resources{gpu: 1}}, "x": {Count: 1, Each: topology.Resources{gpu: 1}}}, capacity, false},
		{"an unknown node", one("ghost", 1, nil), capacity, false},
		{"no capacity", one("y", 1, nil), nil, false},
		{"a zero-count slot is no reservation", one("x", 0, topology.Resources{gpu: 99}), capacity, true},
		{"an empty reservation", placement.Reservation{}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"Choose", "Pin", "Reserve"} {
				s := placement.NewStore()
				mustPin(t, s, "ns/a", "k", "d", one("x", 2, topology.Resources{gpu: 4}), 2, capacity)
				var fits bool
				switch via {
				case "Choose":
					r := s.Choose(placement.ChooseRequest{Gang: "ns/b", Owner: "u", Key: "k", Need: 3, Rooms: map[string]int{"d": 3},
						Reserve: func(string) placement.Reservation { return tc.res }, Capacity: tc.capacity})
					fits = r.OK
					if r.OK == r.Conflict {
						t.Fatalf("%s: %+v; want exactly one of OK and Conflict", via, r)
					}
				case "Pin":
					_, out := s.Pin(placement.PinRequest{Gang: "ns/b", Owner: "u", Key: "k", Domain: "d",
						Reserved: tc.res, Capacity: tc.capacity, Remaining: 3})
					fits = out == placement.Pinned
					if !fits && out != placement.HeldByOther {
						t.Fatalf("%s: outcome %v", via, out)
					}
				case "Reserve":
					b := mustPin(t, s, "ns/b", "k", "d", nil, 3, nil)
					fits, _ = s.Reserve("ns/b", b.ID, tc.res, tc.capacity)
				}
				if fits != tc.fits {
					t.Fatalf("%s: fits = %v, want %v", via, fits, tc.fits)
				}
				got, pinned := s.Get("ns/b")
				switch {
				case fits && (!pinned || !reflect.DeepEqual(got.Reserved, tc.res)):
					t.Fatalf("%s: ns/b = %+v,%v; want the reservation %v recorded", via, got, pinned, tc.res)
				case !fits && pinned && len(got.Reserved) != 0:
					t.Fatalf("%s: a refused reservation was recorded: %+v", via, got)
				case !fits && via != "Reserve" && pinned:
					t.Fatalf("%s: a refused pin was recorded: %+v", via, got)
				}
				if r := s.ReservedOn("x", "ns/b"); !reflect.DeepEqual(r.Gangs, []string{"ns/a"}) || r.Resources[gpu] != 8 || r.Pods != 2 {
					t.Fatalf("%s: A's reservation on x changed: %+v", via, r)
				}
			}
		})
	}
}

// TestDrainConsumesASlot: a drain takes the slot of the member's node, else one on the node
// with the most reserved members (ties by name), and then the generation moves.
func TestDrainConsumesASlot(t *testing.T) {
	type step struct {
		node     string
		reserved placement.Reservation
		moves    bool // the generation moves and the drain reports room given back
	}
	mixed := placement.Reservation{
		"n0": {Count: 2, Each: topology.Resources{gpu: 1}},
		"n1": {Count: 1, Each: topology.Resources{gpu: 2}},
		"n2": {Count: 1, Each: topology.Resources{gpu: 3}},
	}
	without := func(r placement.Reservation, n string, count int) placement.Reservation {
		out := placement.Reservation{}
		for k, v := range r {
			out[k] = v
		}
		if count == 0 {
			delete(out, n)
		} else {
			sl := out[n]
			sl.Count = count
			out[n] = sl
		}
		return out
	}
	cases := []struct {
		name      string
		res       placement.Reservation
		remaining int
		steps     []step
	}{
		{"the node's own slot", mixed, 5, []step{
			{"n1", without(mixed, "n1", 0), false},
			{"n0", without(without(mixed, "n1", 0), "n0", 1), false},
		}},
		{"elsewhere: the node with the most members", mixed, 5, []step{
			{"n9", without(mixed, "n0", 1), true},
		}},
		{"elsewhere: ties by name", slots(1, 1, "n2", "n1", "n3"), 5, []step{
			{"n9", slots(1, 1, "n2", "n3"), true},
			{"", slots(1, 1, "n3"), true},
		}},
		{"a drained-out node takes the fallback", slots(1, 1, "n0", "n1"), 5, []step{
			{"n0", slots(1, 1, "n1"), false},
			{"n0", placement.Reservation{}, true},
		}},
		{"nothing left to consume", slots(1, 1, "n0"), 3, []step{
			{"n0", placement.Reservation{}, false},
			{"n5", placement.Reservation{}, false},
			{"n5", nil, true}, // committed
		}},
		{"the last member commits", slots(2, 1, "n0"), 2, []step{
			{"n0", slots(1, 1, "n0"), false},
			{"n0", nil, true},
		}},
		{"the last member commits elsewhere", slots(2, 1, "n0"), 2, []step{
			{"n0", slots(1, 1, "n0"), false},
			{"n7", nil, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			c := mustPin(t, s, "ns/g", clique, "a", tc.res, tc.remaining, roomy())
			for i, st := range tc.steps {
				gen := s.Generation()
				r := s.Drain("ns/g", c.ID, st.node)
				if !r.Owned || r.Remaining != tc.remaining-i-1 || r.Committed != (r.Remaining == 0) {
					t.Fatalf("step %d: Drain(%q) = %+v", i, st.node, r)
				}
				got, _ := s.Get("ns/g")
				if len(got.Reserved) != len(st.reserved) || (len(st.reserved) > 0 && !reflect.DeepEqual(got.Reserved, st.reserved)) {
					t.Fatalf("step %d: Drain(%q) left %v, want %v", i, st.node, got.Reserved, st.reserved)
				}
				if moved := s.Generation() != gen; moved != st.moves || r.GaveBack != st.moves {
					t.Fatalf("step %d: Drain(%q) moved the generation: %v, gave back: %v; want %v", i, st.node, moved, r.GaveBack, st.moves)
				}
				for _, n := range []string{"n0", "n1", "n2", "n3"} {
					sl := got.Reserved[n]
					r := s.ReservedOn(n, "")
					if sl.Count == 0 && len(r.Gangs) != 0 || sl.Count > 0 && (r.Pods != int64(sl.Count) || !reflect.DeepEqual(r.Gangs, []string{"ns/g"})) {
						t.Fatalf("step %d: ReservedOn(%s) = %+v with slot %+v", i, n, r, sl)
					}
				}
			}
		})
	}
}
