package placement_test

import (
	"reflect"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// TestReserveReplaces: Reserve replaces a forming commitment's reservation when the new one
// fits next to every other gang's (the gang's own old one does not count); room given back
// on any node moves the generation.
func TestReserveReplaces(t *testing.T) {
	capacity := cluster{
		"x": {free: topology.Resources{gpu: 8, cpu: 4}, pods: 4},
		"y": {free: topology.Resources{gpu: 8, cpu: 4}, pods: 4},
	}.capacity()
	old := placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 2}}}
	cases := []struct {
		name  string
		res   placement.Reservation
		stale bool
		ok    bool
		moves bool
	}{
		{"the same", old, false, true, false},
		{"grow within capacity", placement.Reservation{"x": {Count: 2, Each: topology.Resources{gpu: 2}}}, false, true, false},
		{"grow to the node's last GPU", placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 4}}}, false, true, false},
		{"grow beyond capacity", placement.Reservation{"x": {Count: 3, Each: topology.Resources{gpu: 2}}}, false, false, false},
		{"grow onto another node", placement.Reservation{"x": old["x"], "y": {Count: 2, Each: topology.Resources{gpu: 2}}}, false, true, false},
		{"shrink to nothing", placement.Reservation{}, false, true, true},
		{"move to another node", placement.Reservation{"y": {Count: 1, Each: topology.Resources{gpu: 2}}}, false, true, true},
		{"fewer GPUs per member", placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 1}}}, false, true, true},
		{"more members but fewer GPUs", placement.Reservation{"x": {Count: 2, Each: topology.Resources{cpu: 1}}}, false, true, true},
		{"an unknown node", placement.Reservation{"x": old["x"], "ghost": {Count: 1}}, false, false, false},
		{"a stale attempt id", placement.Reservation{}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			mustPin(t, s, "ns/other", "k", "d", placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 4}}}, 1, capacity)
			c := mustPin(t, s, "ns/g", "k", "d", old, 3, capacity)
			id := c.ID
			if tc.stale {
				id++
			}
			gen := s.Generation()
			ok, gaveBack := s.Reserve("ns/g", id, tc.res, capacity)
			if ok != tc.ok || gaveBack != tc.moves {
				t.Fatalf("Reserve = %v, gave back %v; want %v, %v", ok, gaveBack, tc.ok, tc.moves)
			}
			want := old
			if tc.ok {
				want = tc.res
			}
			if got, _ := s.Get("ns/g"); !reflect.DeepEqual(got.Reserved, want) {
				t.Fatalf("reservation %v, want %v", got.Reserved, want)
			}
			if moved := s.Generation() != gen; moved != tc.moves {
				t.Fatalf("generation moved %v, want %v", moved, tc.moves)
			}
			var pods int64
			for n, sl := range want {
				if n == "x" {
					pods = int64(sl.Count)
				}
			}
			if r := s.ReservedOn("x", "ns/other"); r.Pods != pods || (pods == 0) != (len(r.Gangs) == 0) {
				t.Fatalf("ReservedOn(x) without other = %+v, want %d pods", r, pods)
			}
		})
	}
	t.Run("only a forming commitment it owns", func(t *testing.T) {
		s := placement.NewStore()
		if ok, _ := s.Reserve("ns/none", 1, old, capacity); ok {
			t.Fatal("Reserve for an unknown gang")
		}
		c := mustPin(t, s, "ns/g", "k", "d", old, 1, capacity)
		s.Drain("ns/g", c.ID, "x")
		if ok, _ := s.Reserve("ns/g", c.ID, old, capacity); ok {
			t.Fatal("Reserve for a committed gang")
		}
		if got, _ := s.Get("ns/g"); got.Reserved != nil || len(s.ReservedOn("x", "").Gangs) != 0 {
			t.Fatalf("committed gang reserves %v", got.Reserved)
		}
	})
	t.Run("the store keeps its own copy", func(t *testing.T) {
		s := placement.NewStore()
		c := mustPin(t, s, "ns/g", "k", "d", nil, 2, nil)
		res := placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 2}}}
		if ok, _ := s.Reserve("ns/g", c.ID, res, capacity); !ok {
			t.Fatal("Reserve refused")
		}
		res["x"].Each[gpu] = 99
		res["y"] = placement.Slot{Count: 4}
		if r := s.ReservedOn("x", ""); r.Resources[gpu] != 2 || len(s.ReservedOn("y", "").Gangs) != 0 {
			t.Fatalf("store aliases Reserve's argument: x %+v", r)
		}
	})
}

// TestReleaseGivesRoomBack: releasing or expiring a forming commitment, or draining it to 0,
// gives its reserved room back (the generation moves) and another gang then fits.
func TestReleaseGivesRoomBack(t *testing.T) {
	capacity := uniform(8, 1, "x").capacity()
	full := slots(1, 8, "x")
	cases := []struct {
		name string
		end  func(s *placement.Store, c placement.Commitment) bool
	}{
		{"Release", func(s *placement.Store, c placement.Commitment) bool {
			_, ok := s.Release(c.Gang, c.ID, nil)
			return ok
		}},
		{"Release AnyID", func(s *placement.Store, c placement.Commitment) bool {
			_, ok := s.Release(c.Gang, placement.AnyID, nil)
			return ok
		}},
		{"Expire", func(s *placement.Store, c placement.Commitment) bool { _, ok := s.Expire(c.Gang, c.ID, nil); return ok }},
		{"drain to 0 elsewhere", func(s *placement.Store, c placement.Commitment) bool { return s.Drain(c.Gang, c.ID, "y").Committed }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			c := mustPin(t, s, "ns/a", "k", "d", full, 1, capacity)
			if _, out := s.Pin(placement.PinRequest{Gang: "ns/b", Owner: "u", Key: "k", Domain: "d", Reserved: full, Capacity: capacity, Remaining: 1}); out != placement.HeldByOther {
				t.Fatalf("B while A reserves x: %v", out)
			}
			gen := s.Generation()
			if !tc.end(s, c) {
				t.Fatal("A's reservation did not end")
			}
			if s.Generation() == gen {
				t.Fatal("room given back without the generation moving")
			}
			if s.ReservedOn("x", "").Pods != 0 || s.ReservedExcept("ns/b") != nil {
				t.Fatalf("x still reserved: %+v", s.ReservedOn("x", ""))
			}
			mustPin(t, s, "ns/b", "k", "d", full, 1, capacity)
		})
	}
}

// TestReservedOnAndExcept sums the slots of the forming gangs per node, leaving out except.
func TestReservedOnAndExcept(t *testing.T) {
	s := placement.NewStore()
	if r := s.ReservedOn("x", ""); !reflect.DeepEqual(r, placement.Reserved{}) || s.ReservedExcept("") != nil {
		t.Fatalf("empty store reserves %+v", r)
	}
	capacity := cluster{
		"x": {free: topology.Resources{gpu: 8, cpu: 8}, pods: 8},
		"y": {free: topology.Resources{gpu: 8, cpu: 8}, pods: 8},
		"z": {free: topology.Resources{gpu: 8, cpu: 8}, pods: 8},
	}.capacity()
	mustPin(t, s, "ns/a", "k", "d", placement.Reservation{
		"x": {Count: 2, Each: topology.Resources{gpu: 2}},
		"y": {Count: 1, Each: topology.Resources{gpu: 1, cpu: 1}},
	}, 3, capacity)
	mustPin(t, s, "ns/b", "k", "e", placement.Reservation{"x": {Count: 1, Each: topology.Resources{gpu: 1, cpu: 2}}}, 4, capacity)
	c := mustPin(t, s, "ns/c", "k", "f", placement.Reservation{"z": {Count: 1, Each: topology.Resources{gpu: 8}}}, 1, capacity)
	s.Drain("ns/c", c.ID, "z") // committed: reserves nothing
	aX := placement.Reserved{Resources: topology.Resources{gpu: 4}, Pods: 2, Gangs: []string{"ns/a"}}
	bX := placement.Reserved{Resources: topology.Resources{gpu: 1, cpu: 2}, Pods: 1, Gangs: []string{"ns/b"}}
	abX := placement.Reserved{Resources: topology.Resources{gpu: 5, cpu: 2}, Pods: 3, Gangs: []string{"ns/a", "ns/b"}}
	aY := placement.Reserved{Resources: topology.Resources{gpu: 1, cpu: 1}, Pods: 1, Gangs: []string{"ns/a"}}
	cases := []struct {
		node, except string
		want         placement.Reserved
	}{
		{"x", "", abX},
		{"x", "ns/c", abX},
		{"x", "ns/a", bX},
		{"x", "ns/b", aX},
		{"y", "", aY},
		{"y", "ns/b", aY},
		{"y", "ns/a", placement.Reserved{}},
		{"z", "", placement.Reserved{}},
		{"w", "", placement.Reserved{}},
	}
	for _, tc := range cases {
		if got := s.ReservedOn(tc.node, tc.except); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ReservedOn(%s, %q) = %+v, want %+v", tc.node, tc.except, got, tc.want)
		}
	}
	except := []struct {
		gang string
		want map[string]placement.Reserved
	}{
		{"", map[string]placement.Reserved{"x": abX, "y": aY}},
		{"ns/c", map[string]placement.Reserved{"x": abX, "y": aY}},
		{"ns/a", map[string]placement.Reserved{"x": bX}},
		{"ns/b", map[string]placement.Reserved{"x": aX, "y": aY}},
	}
	for _, tc := range except {
		if got := s.ReservedExcept(tc.gang); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ReservedExcept(%q) = %+v, want %+v", tc.gang, got, tc.want)
		}
	}
}

func TestLeaves(t *testing.T) {
	held := placement.Reserved{Resources: topology.Resources{gpu: 4, cpu: 2}, Pods: 2, Gangs: []string{"ns/a"}}
	free := topology.Resources{gpu: 8, cpu: 4}
	cases := []struct {
		name     string
		reserved placement.Reserved
		freePods int64
		req      topology.Resources
		want     bool
	}{
		{"fits beside the reservation", held, 3, topology.Resources{gpu: 4, cpu: 2}, true},
		{"one GPU too many", held, 3, topology.Resources{gpu: 5}, false},
		{"one CPU too many", held, 3, topology.Resources{cpu: 3}, false},
		{"no pod slot left", held, 2, nil, false},
		{"a resource the node lacks", held, 3, topology.Resources{"rdma": 1}, false},
		{"zero quantities ask nothing", held, 3, topology.Resources{"rdma": 0, gpu: 0}, true},
		{"nothing reserved, a free pod slot", placement.Reserved{}, 1, topology.Resources{gpu: 8, cpu: 4}, true},
		{"nothing reserved, no pod slot", placement.Reserved{}, 0, nil, false},
		{"nothing reserved, too much asked", placement.Reserved{}, 1, topology.Resources{gpu: 9}, false},
	}
	for _, tc := range cases {
		if got := tc.reserved.Leaves(free, tc.freePods, tc.req); got != tc.want {
			t.Errorf("%s: Leaves = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReservationMembers(t *testing.T) {
	if n := (placement.Reservation{}).Members(); n != 0 {
		t.Fatalf("empty: %d", n)
	}
	if n := (placement.Reservation(nil)).Members(); n != 0 {
		t.Fatalf("nil: %d", n)
	}
	if n := slots(3, 1, "a", "b").Members(); n != 6 {
		t.Fatalf("3+3: %d", n)
	}
}
