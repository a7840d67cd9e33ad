package placement_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Test cluster: six nodes partitioned two ways.
//
//	key "clique": a = {n0,n1}, b = {n2,n3}, c = {n4,n5}
//	key "rack":   x = {n0,n2,n4}, y = {n1,n3}, z = {n5}
//
// Unless a test says otherwise every node has 8 GPUs and 4 free pod slots (roomy), and a gang
// reserves its members one GPU each, round-robin over its domain's nodes (spread).
const (
	clique = "clique"
	rack   = "rack"
	gpu    = "nvidia.com/gpu"
	cpu    = "cpu"
)

var domains = map[string]map[string][]string{
	clique: {"a": {"n0", "n1"}, "b": {"n2", "n3"}, "c": {"n4", "n5"}},
	rack:   {"x": {"n0", "n2", "n4"}, "y": {"n1", "n3"}, "z": {"n5"}},
}

var allNodes = []string{"n0", "n1", "n2", "n3", "n4", "n5"}

// room is a node's free room: resources and pod slots.
type room struct {
	free topology.Resources
	pods int64
}

// cluster is the free room of the test nodes; a node it does not list is unknown.
type cluster map[string]room

func (c cluster) capacity() placement.Capacity {
	return func(n string) (topology.Resources, int64, bool) {
		r, ok := c[n]
		if !ok {
			return nil, 0, false
		}
		return r.free, r.pods, true
	}
}

// uniform is a cluster whose nodes have gpus GPUs and pods free pod slots each.
func uniform(gpus, pods int64, nodes ...string) cluster {
	c := cluster{}
	for _, n := range nodes {
		c[n] = room{free: topology.Resources{gpu: gpus}, pods: pods}
	}
	return c
}

func roomy() placement.Capacity { return uniform(8, 4, allNodes...).capacity() }

// spread reserves need members of one GPU each, round-robin over the domain's nodes.
func spread(key string, need int) func(string) placement.Reservation {
	return func(d string) placement.Reservation {
		ns := domains[key][d]
		if len(ns) == 0 || need <= 0 {
			return nil
		}
		res := placement.Reservation{}
		for i := 0; i < need; i++ {
			n := ns[i%len(ns)]
			sl := res[n]
			sl.Count++
			sl.Each = topology.Resources{gpu: 1}
			res[n] = sl
		}
		return res
	}
}

// slots builds a reservation of count members of each GPUs on every node listed.
func slots(count int, each int64, nodes ...string) placement.Reservation {
	res := placement.Reservation{}
	for _, n := range nodes {
		res[n] = placement.Slot{Count: count, Each: topology.Resources{gpu: each}}
	}
	return res
}

func choose(s *placement.Store, gang, owner, key string, need int, rooms map[string]int) placement.ChooseResult {
	return s.Choose(placement.ChooseRequest{Gang: gang, Owner: owner, Key: key, Need: need, Rooms: rooms,
		Reserve: spread(key, need), Capacity: roomy()})
}

func mustChoose(t *testing.T, s *placement.Store, gang, key string, need int, rooms map[string]int, wantDomain string) placement.Commitment {
	t.Helper()
	res := choose(s, gang, "uid-"+gang, key, need, rooms)
	if !res.OK || res.Existing || res.Conflict || res.Commitment.Domain != wantDomain {
		t.Fatalf("Choose(%s, need %d, %v) = %+v; want new pin on %q", gang, need, rooms, res, wantDomain)
	}
	return res.Commitment
}

// mustPin pins gang on key/domain with the reservation against the capacity.
func mustPin(t *testing.T, s *placement.Store, gang, key, domain string, res placement.Reservation, remaining int, capacity placement.Capacity) placement.Commitment {
	t.Helper()
	c, out := s.Pin(placement.PinRequest{Gang: gang, Owner: "uid-" + gang, Key: key, Domain: domain,
		Reserved: res, Capacity: capacity, Remaining: remaining})
	if out != placement.Pinned {
		t.Fatalf("Pin(%s on %s/%s, %v) = %v; want Pinned", gang, key, domain, res, out)
	}
	return c
}

// withoutReserved drops the reservation, which a release or a commit gives back.
func withoutReserved(c placement.Commitment) placement.Commitment {
	c.Reserved = nil
	return c
}

func TestChoosePicksBestFit(t *testing.T) {
	cases := []struct {
		name    string
		rooms   map[string]int
		need    int
		want    string // "" = none
		soleFit bool
	}{
		{"smallest fitting room", map[string]int{"a": 18, "b": 6, "c": 4}, 4, "c", false},
		{"skips too-small domains", map[string]int{"a": 18, "b": 5, "c": 2}, 4, "b", false},
		{"tie → byte-wise smallest", map[string]int{"c": 6, "a": 6, "b": 6}, 4, "a", false},
		{"sole fitting domain", map[string]int{"a": 2, "b": 3, "c": 4}, 4, "c", true},
		{"no fitting domain", map[string]int{"a": 2, "b": 3}, 4, "", false},
		{"empty room map", map[string]int{}, 1, "", false},
		{"need 0 never pins", map[string]int{"a": 4}, 0, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			gen := s.Generation()
			res := choose(s, "ns/g", "uid1", clique, tc.need, tc.rooms)
			if res.Conflict {
				t.Fatalf("Choose = %+v; nothing reserved, no conflict possible", res)
			}
			if tc.want == "" {
				if res.OK || res.Existing || s.Len() != 0 {
					t.Fatalf("Choose = %+v (len %d); want no pin", res, s.Len())
				}
				return
			}
			c := res.Commitment
			if !res.OK || res.Existing {
				t.Fatalf("Choose = %+v; want a new pin", res)
			}
			want := placement.Commitment{Gang: "ns/g", Key: clique, Domain: tc.want, Owner: "uid1",
				ID: c.ID, Reserved: spread(clique, tc.need)(tc.want), Remaining: tc.need, SoleFit: tc.soleFit}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("commitment = %+v, want %+v", c, want)
			}
			if c.ID == placement.AnyID {
				t.Fatalf("attempt id must never be AnyID (0)")
			}
			if got, ok := s.Get("ns/g"); !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("Get = %+v,%v; want %+v", got, ok, want)
			}
			if !c.Forming() || s.HeldDomains() != 1 {
				t.Fatalf("forming=%v heldDomains=%d; want a forming hold", c.Forming(), s.HeldDomains())
			}
			if s.Generation() != gen {
				t.Fatalf("a new pin moved the generation %d → %d", gen, s.Generation())
			}
		})
	}
}

// TestChooseRank: the optional rank breaks ties among equally fitting domains; it never
// overrides best fit, and a conflict on the chosen domain does not fall back to another.
func TestChooseRank(t *testing.T) {
	rank := func(m map[string]int) func(string) int { return func(d string) int { return m[d] } }
	t.Run("rank breaks a tie", func(t *testing.T) {
		s := placement.NewStore()
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 4, "b": 4, "c": 4}, Reserve: spread(clique, 2), Capacity: roomy(),
			Rank: rank(map[string]int{"a": 2, "b": 1, "c": 1})})
		if !res.OK || res.Commitment.Domain != "b" || res.Commitment.SoleFit {
			t.Fatalf("Choose = %+v; want b (lowest rank, then name), not sole fit", res)
		}
	})
	t.Run("rank never beats a tighter fit", func(t *testing.T) {
		s := placement.NewStore()
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 2, "b": 4}, Reserve: spread(clique, 2), Capacity: roomy(),
			Rank: rank(map[string]int{"a": 9, "b": 0})})
		if !res.OK || res.Commitment.Domain != "a" {
			t.Fatalf("Choose = %+v; want a", res)
		}
	})
	t.Run("a conflict on the best domain does not fall back", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(1, 1, allNodes...).capacity() // one member per node
		mustPin(t, s, "ns/h", clique, "a", slots(1, 1, "n0", "n1"), 2, capacity)
		// Rooms counted before h reserved: a still looks free and ranks first.
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 2, "b": 2, "c": 2}, Reserve: spread(clique, 2), Capacity: capacity,
			Rank: rank(map[string]int{"a": 0, "b": 2, "c": 1})})
		if res.OK || !res.Conflict || res.Existing || s.Len() != 1 {
			t.Fatalf("Choose = %+v (len %d); want Conflict on a and no pin", res, s.Len())
		}
	})
}

// TestChoosePrefer: the domain the gang prefers wins among the fitting ones, before best fit;
// a preferred domain without room does not.
func TestChoosePrefer(t *testing.T) {
	prefer := func(m map[string]int64) func(string) int64 { return func(d string) int64 { return m[d] } }
	for _, tc := range []struct {
		name  string
		rooms map[string]int
		prefs map[string]int64
		want  string
	}{
		{"preference beats best fit", map[string]int{"a": 2, "b": 4}, map[string]int64{"b": 100}, "b"},
		{"a preferred domain too small loses", map[string]int{"a": 2, "b": 1}, map[string]int64{"b": 100}, "a"},
		{"equal preferences: best fit", map[string]int{"a": 2, "b": 4}, map[string]int64{"a": 50, "b": 50}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
				Rooms: tc.rooms, Reserve: spread(clique, 2), Capacity: roomy(), Prefer: prefer(tc.prefs)})
			if !res.OK || res.Commitment.Domain != tc.want {
				t.Fatalf("Choose = %+v; want %s", res, tc.want)
			}
		})
	}
}

// TestTraces replays example traces at the store level.
func TestTraces(t *testing.T) {
	t.Run("two gangs of 3", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/first", clique, 3, map[string]int{"a": 3, "b": 4}, "a")
		// The second gang's planning counts the room outside the first one's reservation.
		mustChoose(t, s, "ns/second", clique, 3, map[string]int{"a": 0, "b": 4}, "b")
	})
	t.Run("conflict, then the holder is released", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(8, 1, allNodes...).capacity() // one pod slot per node
		rooms := map[string]int{"a": 2}
		req := func(gang string) placement.ChooseRequest {
			return placement.ChooseRequest{Gang: gang, Owner: "u", Key: clique, Need: 2, Rooms: rooms,
				Reserve: spread(clique, 2), Capacity: capacity}
		}
		h := s.Choose(req("ns/holder"))
		if !h.OK {
			t.Fatalf("holder = %+v", h)
		}
		gen := s.Generation()
		if res := s.Choose(req("ns/second")); res.OK || !res.Conflict {
			t.Fatalf("second = %+v while a is reserved; want Conflict", res)
		}
		if _, ok := s.Release("ns/holder", h.Commitment.ID, nil); !ok {
			t.Fatal("release holder")
		}
		if s.Generation() == gen {
			t.Fatal("releasing the holder's reservation did not move the generation")
		}
		if res := s.Choose(req("ns/second")); !res.OK || res.Commitment.Domain != "a" {
			t.Fatalf("second after release = %+v; want a", res)
		}
	})
}

func TestChooseAlreadyPinned(t *testing.T) {
	s := placement.NewStore()
	first := choose(s, "ns/g", "uid1", clique, 2, map[string]int{"a": 2, "b": 4})
	if !first.OK {
		t.Fatalf("first Choose = %+v", first)
	}
	// Same owner: the existing pin, whatever the new rooms say.
	again := choose(s, "ns/g", "uid1", clique, 2, map[string]int{"b": 4})
	if !again.OK || !again.Existing || !reflect.DeepEqual(again.Commitment, first.Commitment) {
		t.Fatalf("same owner: %+v; want the existing pin %+v", again, first.Commitment)
	}
	// Different owner: nothing (and no new commitment).
	other := choose(s, "ns/g", "uid2", clique, 2, map[string]int{"b": 4})
	if other.OK || !other.Existing || other.Commitment.Owner != "uid1" {
		t.Fatalf("other owner: %+v; want Existing without OK", other)
	}
	if s.Len() != 1 {
		t.Fatalf("Len = %d", s.Len())
	}
	if c, _ := s.Get("ns/g"); c.ID != first.Commitment.ID {
		t.Fatalf("id changed: %d → %d", first.Commitment.ID, c.ID)
	}
}

// TestConcurrentChooseNeverOversubscribes races many gangs, all planning from the same stale
// rooms, for nodes of one pod slot each under both keys: the reservations that result never
// count the same slot twice.
func TestConcurrentChooseNeverOversubscribes(t *testing.T) {
	capacity := uniform(8, 1, allNodes...)
	for round := 0; round < 20; round++ {
		s := placement.NewStore()
		var wg sync.WaitGroup
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				key, rooms := clique, map[string]int{"a": 2, "b": 2, "c": 2}
				if i%2 == 1 {
					key, rooms = rack, map[string]int{"x": 3, "y": 2, "z": 1}
				}
				need := 1 + i%2
				s.Choose(placement.ChooseRequest{Gang: fmt.Sprintf("ns/g%d", i), Owner: "u", Key: key, Need: need,
					Rooms: rooms, Reserve: spread(key, need), Capacity: capacity.capacity()})
			}(i)
		}
		wg.Wait()
		list := s.List()
		if len(list) == 0 {
			t.Fatal("nobody pinned")
		}
		if msg := oversubscribed(list, capacity); msg != "" {
			t.Fatalf("round %d: %s: %+v", round, msg, list)
		}
	}
}

// oversubscribed reports a node whose forming reservations exceed its free room ("" = none).
func oversubscribed(list []placement.Commitment, c cluster) string {
	pods := map[string]int64{}
	res := map[string]topology.Resources{}
	for _, cm := range list {
		if !cm.Forming() {
			continue
		}
		for n, sl := range cm.Reserved {
			pods[n] += int64(sl.Count)
			if res[n] == nil {
				res[n] = topology.Resources{}
			}
			for name, q := range sl.Each {
				res[n][name] += q * int64(sl.Count)
			}
		}
	}
	for n, p := range pods {
		r, ok := c[n]
		if !ok {
			return fmt.Sprintf("node %s unknown but reserved", n)
		}
		if p > r.pods {
			return fmt.Sprintf("node %s: %d pods reserved, %d free", n, p, r.pods)
		}
		for name, q := range res[n] {
			if q > r.free[name] {
				return fmt.Sprintf("node %s: %d %s reserved, %d free", n, q, name, r.free[name])
			}
		}
	}
	return ""
}
