package placement_test

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

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

func TestDrain(t *testing.T) {
	s := placement.NewStore()
	c := mustChoose(t, s, "ns/g", clique, 3, map[string]int{"a": 3}, "a") // n0: 2, n1: 1
	if r := s.Drain("ns/g", c.ID+1, "n0"); r != (placement.DrainResult{}) {
		t.Fatalf("stale-id drain = %+v; want not owned", r)
	}
	if r := s.Drain("ns/other", c.ID, "n0"); r != (placement.DrainResult{}) {
		t.Fatalf("unknown-gang drain = %+v; want not owned", r)
	}
	if got, _ := s.Get("ns/g"); got.Remaining != 3 || got.Reserved.Members() != 3 {
		t.Fatalf("stale drains changed the commitment: %+v", got)
	}
	want := []struct {
		node     string
		result   placement.DrainResult
		reserved placement.Reservation
	}{
		{"n0", placement.DrainResult{Owned: true, Remaining: 2}, slots(1, 1, "n0", "n1")},
		{"n1", placement.DrainResult{Owned: true, Remaining: 1}, slots(1, 1, "n0")},
		{"n0", placement.DrainResult{Owned: true, Committed: true, Remaining: 0, GaveBack: true}, nil},
		{"n0", placement.DrainResult{Owned: true}, nil},
		{"n1", placement.DrainResult{Owned: true}, nil},
	}
	for i, w := range want {
		if r := s.Drain("ns/g", c.ID, w.node); r != w.result {
			t.Fatalf("drain %d = %+v, want %+v", i, r, w.result)
		}
		got, ok := s.Get("ns/g")
		if !ok || got.Remaining < 0 || len(got.Reserved) != len(w.reserved) || (len(w.reserved) > 0 && !reflect.DeepEqual(got.Reserved, w.reserved)) {
			t.Fatalf("after drain %d: %+v,%v; want reserved %v", i, got, ok, w.reserved)
		}
	}
	// The hold is lifted at 0 but the commitment stays (committed).
	if r := s.ReservedOn("n0", ""); len(r.Gangs) != 0 {
		t.Fatalf("n0 still reserved after drain to 0: %+v", r)
	}
	if s.HeldDomains() != 0 || s.Len() != 1 {
		t.Fatalf("HeldDomains = %d Len = %d; want 0 and 1", s.HeldDomains(), s.Len())
	}
	if got, _ := s.Get("ns/g"); got.Forming() || got.Remaining != 0 {
		t.Fatalf("commitment %+v; want committed", got)
	}
}

func TestDrainAdoptedCommitted(t *testing.T) {
	s := placement.NewStore()
	// A committed adoption holds no room: its reservation is neither checked nor recorded.
	c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Reserved: slots(1, 1, "n0"), Remaining: 0})
	if out != placement.Pinned || c.Forming() || len(c.Reserved) != 0 {
		t.Fatalf("Pin = %+v,%v; want committed pin without reservation", c, out)
	}
	if r := s.Drain("ns/g", c.ID, "n0"); r != (placement.DrainResult{Owned: true}) {
		t.Fatalf("drain of committed pin = %+v", r)
	}
	if s.HeldDomains() != 0 || len(s.ReservedOn("n0", "").Gangs) != 0 {
		t.Fatalf("committed pin holds %d domains, n0 %+v", s.HeldDomains(), s.ReservedOn("n0", ""))
	}
}

func TestCommitted(t *testing.T) {
	s := placement.NewStore()
	if o, c := s.Committed("ns/g", 1); o || c {
		t.Fatalf("unknown gang: owned=%v committed=%v", o, c)
	}
	cm := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
	check := func(id uint64, wantOwned, wantCommitted bool) {
		t.Helper()
		if o, c := s.Committed("ns/g", id); o != wantOwned || c != wantCommitted {
			t.Fatalf("Committed(%d) = %v,%v; want %v,%v", id, o, c, wantOwned, wantCommitted)
		}
	}
	check(cm.ID, true, false)
	check(cm.ID+1, false, false)
	check(placement.AnyID, false, false)
	s.Drain("ns/g", cm.ID, "n0")
	check(cm.ID, true, false)
	s.Drain("ns/g", cm.ID, "n1")
	check(cm.ID, true, true)
	check(cm.ID-1, false, false)
	s.Release("ns/g", cm.ID, nil)
	check(cm.ID, false, false)
}

func TestRelease(t *testing.T) {
	t.Run("stale attempt id is a no-op", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		called := false
		before, gen := s.List(), s.Generation()
		for _, id := range []uint64{c.ID + 1, c.ID - 1 + 100} {
			if got, ok := s.Release("ns/g", id, func(placement.Commitment) { called = true }); ok || !reflect.DeepEqual(got, placement.Commitment{}) {
				t.Fatalf("Release(stale %d) = %+v,%v", id, got, ok)
			}
		}
		if called {
			t.Fatal("callback ran for a stale release")
		}
		if after := s.List(); !reflect.DeepEqual(before, after) || s.Generation() != gen {
			t.Fatalf("stale release changed the store: %+v → %+v", before, after)
		}
		if r := s.ReservedOn("n1", ""); !reflect.DeepEqual(r.Gangs, []string{"ns/g"}) {
			t.Fatalf("stale release lifted the reservation: %+v", r)
		}
	})
	t.Run("stale id after re-pin", func(t *testing.T) {
		s := placement.NewStore()
		old := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		if _, ok := s.Release("ns/g", old.ID, nil); !ok {
			t.Fatal("release failed")
		}
		cur := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"b": 2}, "b")
		if _, ok := s.Release("ns/g", old.ID, nil); ok {
			t.Fatal("old attempt released the new pin")
		}
		if got, ok := s.Get("ns/g"); !ok || got.ID != cur.ID {
			t.Fatalf("Get = %+v,%v", got, ok)
		}
	})
	t.Run("owner id releases, runs the callback once and gives the room back", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		gen := s.Generation()
		var seen []placement.Commitment
		got, ok := s.Release("ns/g", c.ID, func(rc placement.Commitment) { seen = append(seen, rc) })
		if !ok || !reflect.DeepEqual(withoutReserved(got), withoutReserved(c)) {
			t.Fatalf("Release = %+v,%v; want %+v", got, ok, c)
		}
		if len(seen) != 1 || !reflect.DeepEqual(withoutReserved(seen[0]), withoutReserved(c)) {
			t.Fatalf("callback saw %+v", seen)
		}
		if s.Len() != 0 || s.HeldDomains() != 0 || s.Generation() == gen {
			t.Fatalf("Len=%d HeldDomains=%d generation %d→%d after release", s.Len(), s.HeldDomains(), gen, s.Generation())
		}
		for _, n := range allNodes {
			if r := s.ReservedOn(n, ""); len(r.Gangs) != 0 {
				t.Fatalf("%s still reserved: %+v", n, r)
			}
		}
		if s.ReservedExcept("ns/h") != nil {
			t.Fatal("ReservedExcept not empty with nothing forming")
		}
		if _, ok := s.Release("ns/g", c.ID, func(placement.Commitment) { t.Fatal("callback on double release") }); ok {
			t.Fatal("double release succeeded")
		}
	})
	t.Run("AnyID releases whatever the id", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		called := 0
		got, ok := s.Release("ns/g", placement.AnyID, func(placement.Commitment) { called++ })
		if !ok || got.ID != c.ID || called != 1 {
			t.Fatalf("Release(AnyID) = %+v,%v called=%d", got, ok, called)
		}
		if _, ok := s.Release("ns/g", placement.AnyID, nil); ok {
			t.Fatal("Release(AnyID) of a missing gang succeeded")
		}
		mustChoose(t, s, "ns/other", clique, 2, map[string]int{"a": 2}, "a")
	})
	t.Run("releasing a committed pin gives nothing back", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 1, map[string]int{"a": 1}, "a")
		s.Drain("ns/g", c.ID, "n0")
		gen := s.Generation()
		if _, ok := s.Release("ns/g", placement.AnyID, nil); !ok || s.Len() != 0 {
			t.Fatalf("release of committed pin: ok=%v len=%d", ok, s.Len())
		}
		if s.Generation() != gen {
			t.Fatal("releasing a committed pin moved the generation")
		}
	})
	t.Run("releasing a committed pin keeps another gang's reservation in the same domain", func(t *testing.T) {
		s := placement.NewStore()
		c1 := mustChoose(t, s, "ns/g1", clique, 1, map[string]int{"a": 1}, "a")
		s.Drain("ns/g1", c1.ID, "n0") // committed, hold lifted
		mustChoose(t, s, "ns/g2", clique, 2, map[string]int{"a": 2}, "a")
		if _, ok := s.Release("ns/g1", c1.ID, nil); !ok {
			t.Fatal("release failed")
		}
		if r := s.ReservedOn("n0", ""); !reflect.DeepEqual(r.Gangs, []string{"ns/g2"}) || r.Pods != 1 {
			t.Fatalf("n0 reserved %+v; want one slot of ns/g2", r)
		}
		if s.HeldDomains() != 1 {
			t.Fatalf("HeldDomains = %d", s.HeldDomains())
		}
	})
	t.Run("nil callback", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 1, map[string]int{"a": 1}, "a")
		if _, ok := s.Release("ns/g", c.ID, nil); !ok {
			t.Fatal("release failed")
		}
	})
}

func TestExpire(t *testing.T) {
	s := placement.NewStore()
	c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
	if _, ok := s.Expire("ns/g", c.ID+1, nil); ok {
		t.Fatal("stale Expire released")
	}
	gen := s.Generation()
	if got, ok := s.Expire("ns/g", c.ID, nil); !ok || got.ID != c.ID || s.Len() != 0 || s.Generation() == gen {
		t.Fatalf("Expire = %+v,%v len %d; want released with the room given back", got, ok, s.Len())
	}
	// A committed gang is left alone.
	c = mustChoose(t, s, "ns/g", clique, 1, map[string]int{"a": 1}, "a")
	s.Drain("ns/g", c.ID, "n0")
	if _, ok := s.Expire("ns/g", c.ID, nil); ok || s.Len() != 1 {
		t.Fatalf("Expire released a committed gang (len %d)", s.Len())
	}
}

// TestReleaseCallbackRunsUnderLock proves the callback runs while the store lock is held: a
// goroutine started inside the callback calling Get must block until Release returns.
func TestReleaseCallbackRunsUnderLock(t *testing.T) {
	s := placement.NewStore()
	c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")

	started := make(chan struct{})
	getDone := make(chan bool, 1)
	blockedInCallback := make(chan bool, 1)
	callback := func(rc placement.Commitment) {
		go func() {
			close(started)
			_, ok := s.Get("ns/g")
			getDone <- ok
		}()
		<-started
		// While the callback runs, Get must not complete.
		select {
		case <-getDone:
			blockedInCallback <- false
		case <-time.After(100 * time.Millisecond):
			blockedInCallback <- true
		}
	}
	if _, ok := s.Release("ns/g", c.ID, callback); !ok {
		t.Fatal("release failed")
	}
	if !<-blockedInCallback {
		t.Fatal("Get completed while the release callback was running: callback not under the store lock")
	}
	select {
	case ok := <-getDone:
		if ok {
			t.Fatal("Get after release still found the commitment")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get never completed after Release returned")
	}
}

// TestReleaseCallbackBlocksPin: a Choose racing with the callback cannot re-pin the released
// domain before the callback finished (it observes the callback's side effect).
func TestReleaseCallbackBlocksPin(t *testing.T) {
	s := placement.NewStore()
	c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
	var mu sync.Mutex
	callbackDone := false
	pinned := make(chan bool, 1)
	_, ok := s.Release("ns/g", c.ID, func(placement.Commitment) {
		go func() {
			res := choose(s, "ns/h", "u", clique, 2, map[string]int{"a": 2})
			mu.Lock()
			pinned <- res.OK && callbackDone
			mu.Unlock()
		}()
		select {
		case <-pinned:
			t.Error("Choose completed inside the release callback")
		case <-time.After(50 * time.Millisecond):
		}
		mu.Lock()
		callbackDone = true
		mu.Unlock()
	})
	if !ok {
		t.Fatal("release failed")
	}
	select {
	case ok := <-pinned:
		if !ok {
			t.Fatal("Choose after the release did not pin a after the callback")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Choose never completed")
	}
}

func TestPin(t *testing.T) {
	t.Run("pinned", func(t *testing.T) {
		s := placement.NewStore()
		res := placement.Reservation{"n0": {Count: 2, Each: topology.Resources{gpu: 1}}, "n1": {Count: 1, Each: topology.Resources{gpu: 2}}}
		c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Reserved: res,
			Capacity: roomy(), Remaining: 3, SoleFit: true, MinMember: 5})
		if out != placement.Pinned {
			t.Fatalf("outcome %v", out)
		}
		want := placement.Commitment{Gang: "ns/g", Key: clique, Domain: "a", Owner: "u", ID: c.ID,
			Reserved:  placement.Reservation{"n0": {Count: 2, Each: topology.Resources{gpu: 1}}, "n1": {Count: 1, Each: topology.Resources{gpu: 2}}},
			Remaining: 3, SoleFit: true, MinMember: 5}
		if !reflect.DeepEqual(c, want) || c.ID == placement.AnyID {
			t.Fatalf("Pin = %+v, want %+v", c, want)
		}
		// The store keeps its own copy of the request's reservation.
		res["n0"].Each[gpu] = 7
		res["n2"] = placement.Slot{Count: 1}
		delete(res, "n1")
		if got, _ := s.Get("ns/g"); !reflect.DeepEqual(got, want) {
			t.Fatalf("mutating the request changed the store: %+v", got)
		}
		if r := s.ReservedOn("n0", ""); r.Pods != 2 || r.Resources[gpu] != 2 {
			t.Fatalf("n0 reserved %+v after mutating the request", r)
		}
		if r := s.ReservedOn("n2", ""); len(r.Gangs) != 0 {
			t.Fatalf("store aliases the request's reservation: n2 %+v", r)
		}
	})
	t.Run("already pinned", func(t *testing.T) {
		s := placement.NewStore()
		c1 := mustPin(t, s, "ns/g", clique, "a", slots(1, 1, "n0"), 1, roomy())
		c2, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "other", Key: clique, Domain: "b",
			Reserved: slots(1, 1, "n2"), Capacity: roomy(), Remaining: 5})
		if out != placement.AlreadyPinned || !reflect.DeepEqual(c1, c2) {
			t.Fatalf("second Pin = %+v,%v; want the existing %+v", c2, out, c1)
		}
		if s.Len() != 1 || s.HeldDomains() != 1 {
			t.Fatalf("Len=%d HeldDomains=%d", s.Len(), s.HeldDomains())
		}
	})
	t.Run("already pinned wins over a reservation that does not fit", func(t *testing.T) {
		s := placement.NewStore()
		c1 := mustPin(t, s, "ns/g", clique, "a", slots(1, 1, "n0"), 1, roomy())
		if c2, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a",
			Reserved: slots(9, 9, "n0"), Capacity: roomy(), Remaining: 1}); out != placement.AlreadyPinned || !reflect.DeepEqual(c1, c2) {
			t.Fatalf("Pin = %+v,%v; want AlreadyPinned", c2, out)
		}
	})
	t.Run("held by other: the reservation does not fit next to another gang's", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(8, 4, allNodes...).capacity()
		mustPin(t, s, "ns/g1", clique, "a", slots(2, 4, "n0"), 2, capacity) // n0's 8 GPUs
		c, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: clique, Domain: "a",
			Reserved: slots(1, 1, "n0"), Capacity: capacity, Remaining: 1})
		if out != placement.HeldByOther || !reflect.DeepEqual(c, placement.Commitment{}) {
			t.Fatalf("Pin = %+v,%v; want HeldByOther", c, out)
		}
		if _, ok := s.Get("ns/g2"); ok || s.Len() != 1 {
			t.Fatal("HeldByOther recorded a commitment")
		}
		// The same domain, on the node left free: several gangs form in one domain.
		mustPin(t, s, "ns/g2", clique, "a", slots(1, 1, "n1"), 1, capacity)
		if s.HeldDomains() != 1 || !reflect.DeepEqual(s.HeldDomainRefs(), []placement.DomainRef{{Key: clique, Value: "a"}}) {
			t.Fatalf("HeldDomainRefs = %v", s.HeldDomainRefs())
		}
	})
	t.Run("empty reservations never conflict", func(t *testing.T) {
		s := placement.NewStore()
		mustPin(t, s, "ns/g1", clique, "a", nil, 2, nil)
		mustPin(t, s, "ns/g2", clique, "a", placement.Reservation{}, 2, nil)
		mustPin(t, s, "ns/g3", clique, "a", placement.Reservation{"n0": {Count: 0, Each: topology.Resources{gpu: 99}}}, 2, nil)
		if s.HeldDomains() != 1 || len(s.ReservedOn("n0", "").Gangs) != 0 {
			t.Fatalf("HeldDomains = %d, n0 %+v", s.HeldDomains(), s.ReservedOn("n0", ""))
		}
	})
	t.Run("held by other: different key sharing a node", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(8, 1, allNodes...).capacity()
		mustPin(t, s, "ns/g1", clique, "c", slots(1, 1, "n4", "n5"), 2, capacity)
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: rack, Domain: "z",
			Reserved: slots(1, 1, "n5"), Capacity: capacity, Remaining: 1}); out != placement.HeldByOther {
			t.Fatalf("rack z (n5) outcome %v; want HeldByOther", out)
		}
		mustPin(t, s, "ns/g2", rack, "y", slots(1, 1, "n1", "n3"), 2, capacity)
	})
	t.Run("a committed pin does not block", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(8, 1, allNodes...).capacity()
		c := mustPin(t, s, "ns/g1", clique, "a", slots(1, 1, "n0"), 1, capacity)
		s.Drain("ns/g1", c.ID, "n9") // the member went elsewhere: n0's slot is free again
		mustPin(t, s, "ns/g2", clique, "a", slots(1, 1, "n0", "n1"), 2, capacity)
	})
	t.Run("remaining 0 or negative is committed at once, whatever its reservation", func(t *testing.T) {
		for _, rem := range []int{0, -1, -7} {
			s := placement.NewStore()
			mustPin(t, s, "ns/full", clique, "a", slots(4, 2, "n0"), 4, roomy()) // n0's 4 pod slots
			c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a",
				Reserved: slots(1, 1, "n0"), Capacity: roomy(), Remaining: rem})
			if out != placement.Pinned || c.Remaining != 0 || c.Forming() || c.Reserved != nil {
				t.Fatalf("rem %d: Pin = %+v,%v; want a committed pin without reservation", rem, c, out)
			}
			if s.HeldDomains() != 1 {
				t.Fatalf("rem %d: HeldDomains = %d, want ns/full's only", rem, s.HeldDomains())
			}
			if r := s.ReservedOn("n0", ""); !reflect.DeepEqual(r.Gangs, []string{"ns/full"}) {
				t.Fatalf("rem %d: n0 reserved by %v", rem, r.Gangs)
			}
			if o, cm := s.Committed("ns/g", c.ID); !o || !cm {
				t.Fatalf("rem %d: Committed = %v,%v", rem, o, cm)
			}
		}
	})
	t.Run("own reservation is not held by other", func(t *testing.T) {
		s := placement.NewStore()
		capacity := uniform(8, 1, allNodes...).capacity()
		c := mustPin(t, s, "ns/g", clique, "a", slots(1, 1, "n0", "n1"), 2, capacity)
		s.Release("ns/g", c.ID, nil)
		mustPin(t, s, "ns/g", clique, "a", slots(1, 1, "n0", "n1"), 2, capacity)
	})
}

func TestAttemptIDsStrictlyIncrease(t *testing.T) {
	s := placement.NewStore()
	var last uint64
	next := func(c placement.Commitment) {
		t.Helper()
		if c.ID <= last {
			t.Fatalf("id %d after %d", c.ID, last)
		}
		last = c.ID
	}
	for round := 0; round < 5; round++ {
		next(mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2}, "a"))
		next(mustPin(t, s, "ns/g2", clique, "b", slots(1, 1, "n2"), 1, roomy()))
		// Existing pins do not consume ids.
		if again := choose(s, "ns/g1", "uid-ns/g1", clique, 2, map[string]int{"a": 2}); again.Commitment.ID != last-1 {
			t.Fatalf("existing pin id %d", again.Commitment.ID)
		}
		s.Release("ns/g1", placement.AnyID, nil)
		s.Release("ns/g2", placement.AnyID, nil)
	}
	// Across goroutines too.
	var mu sync.Mutex
	var ids []uint64
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, _ := s.Pin(placement.PinRequest{Gang: fmt.Sprintf("ns/p%d", i), Owner: "u", Key: "k", Domain: fmt.Sprint(i), Remaining: 1})
			mu.Lock()
			ids = append(ids, c.ID)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for i, id := range ids {
		if id <= last || (i > 0 && id == ids[i-1]) {
			t.Fatalf("concurrent ids %v (last sequential %d)", ids, last)
		}
	}
}

func TestGetListLen(t *testing.T) {
	s := placement.NewStore()
	if _, ok := s.Get("ns/none"); ok {
		t.Fatal("Get on empty store")
	}
	if s.Len() != 0 || len(s.List()) != 0 || s.HeldDomains() != 0 {
		t.Fatal("empty store not empty")
	}
	mustChoose(t, s, "ns/c", clique, 1, map[string]int{"c": 1}, "c")
	mustChoose(t, s, "ns/a", clique, 1, map[string]int{"a": 1}, "a")
	mustChoose(t, s, "ns/b", clique, 1, map[string]int{"b": 1}, "b")
	list := s.List()
	var gangs []string
	for _, c := range list {
		gangs = append(gangs, c.Gang)
	}
	if !reflect.DeepEqual(gangs, []string{"ns/a", "ns/b", "ns/c"}) || s.Len() != 3 || s.HeldDomains() != 3 {
		t.Fatalf("List gangs %v Len %d HeldDomains %d", gangs, s.Len(), s.HeldDomains())
	}
	s.Release("ns/b", placement.AnyID, nil)
	if s.Len() != 2 || len(s.List()) != 2 || s.HeldDomains() != 2 {
		t.Fatalf("after release: Len %d HeldDomains %d", s.Len(), s.HeldDomains())
	}
}

// TestGetReturnsIndependentCopy: Get and List return copies that share nothing with the
// store; a caller writing into a returned reservation (its slots or their resources) must
// not change the store's reservation.
func TestGetReturnsIndependentCopy(t *testing.T) {
	s := placement.NewStore()
	mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
	want, _ := s.Get("ns/g")
	c, _ := s.Get("ns/g")
	c.Reserved["n0"].Each[gpu] = 100
	c.Reserved["elsewhere"] = placement.Slot{Count: 1}
	delete(c.Reserved, "n1")
	l := s.List()
	l[0].Reserved["n1"].Each[gpu] = 100
	if again, _ := s.Get("ns/g"); !reflect.DeepEqual(again, want) {
		t.Fatalf("mutating Get's or List's result changed the store: %+v, want %+v", again, want)
	}
	if r := s.ReservedOn("n0", ""); r.Resources[gpu] != 1 {
		t.Fatalf("n0 reserves %d GPUs after mutating a copy; want 1", r.Resources[gpu])
	}
	s.Release("ns/g", placement.AnyID, nil)
	if r := s.ReservedOn("n0", ""); len(r.Gangs) != 0 {
		t.Fatalf("n0 still reserved by %v after release", r.Gangs)
	}
}

func TestFailedDomains(t *testing.T) {
	f := placement.NewFailedDomains()
	g1 := placement.GangOwner{Gang: "ns/g", Owner: "u1"}
	g2 := placement.GangOwner{Gang: "ns/g", Owner: "u2"}
	h := placement.GangOwner{Gang: "ns/h", Owner: "u1"}
	ca := placement.DomainRef{Key: clique, Value: "a"}
	cb := placement.DomainRef{Key: clique, Value: "b"}
	ra := placement.DomainRef{Key: rack, Value: "a"}

	if f.Has(g1, ca) || len(f.Values(g1, clique)) != 0 || len(f.Gangs()) != 0 {
		t.Fatal("new memory not empty")
	}
	if !f.Add(g1, ca) {
		t.Fatal("first Add not new")
	}
	if f.Add(g1, ca) {
		t.Fatal("second Add reported new")
	}
	if !f.Add(g1, cb) || !f.Add(g1, ra) || !f.Add(g2, ca) || !f.Add(h, cb) {
		t.Fatal("distinct Adds not new")
	}
	if !f.Has(g1, ca) || !f.Has(g1, ra) || f.Has(h, ca) || f.Has(placement.GangOwner{Gang: "ns/g"}, ca) {
		t.Fatal("Has wrong")
	}
	set := func(vs ...string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, v := range vs {
			m[v] = struct{}{}
		}
		return m
	}
	if got := f.Values(g1, clique); !reflect.DeepEqual(got, set("a", "b")) {
		t.Fatalf("Values(g1, clique) = %v", got)
	}
	if got := f.Values(g1, rack); !reflect.DeepEqual(got, set("a")) {
		t.Fatalf("Values(g1, rack) = %v", got)
	}
	if got := f.Values(g1, "none"); len(got) != 0 {
		t.Fatalf("Values(g1, none) = %v", got)
	}
	// Values returns a fresh map.
	f.Values(g1, clique)["zzz"] = struct{}{}
	if f.Has(g1, placement.DomainRef{Key: clique, Value: "zzz"}) {
		t.Fatal("Values aliases the memory")
	}
	gangs := f.Gangs()
	sort.Strings(gangs)
	if !reflect.DeepEqual(gangs, []string{"ns/g", "ns/h"}) {
		t.Fatalf("Gangs = %v", gangs)
	}

	f.Clear(g1)
	if f.Has(g1, ca) || len(f.Values(g1, clique)) != 0 {
		t.Fatal("Clear(g1) left domains")
	}
	if !f.Has(g2, ca) || !f.Has(h, cb) {
		t.Fatal("Clear(g1) touched other owners")
	}
	if !f.Add(g1, ca) {
		t.Fatal("Add after Clear not new")
	}
	f.Clear(placement.GangOwner{Gang: "ns/none"}) // no-op

	f.ClearGang("ns/g")
	if f.Has(g1, ca) || f.Has(g2, ca) {
		t.Fatal("ClearGang left an owner's domains")
	}
	if !f.Has(h, cb) {
		t.Fatal("ClearGang touched another gang")
	}
	if got := f.Gangs(); !reflect.DeepEqual(got, []string{"ns/h"}) {
		t.Fatalf("Gangs after ClearGang = %v", got)
	}
	f.ClearGang("ns/none") // no-op
}

func TestFailedDomainsConcurrent(t *testing.T) {
	f := placement.NewFailedDomains()
	var wg sync.WaitGroup
	var mu sync.Mutex
	newCount := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			g := placement.GangOwner{Gang: "ns/g", Owner: "u"}
			for j := 0; j < 50; j++ {
				if f.Add(g, placement.DomainRef{Key: "k", Value: fmt.Sprint(j % 10)}) {
					mu.Lock()
					newCount++
					mu.Unlock()
				}
				f.Has(g, placement.DomainRef{Key: "k", Value: "1"})
				f.Values(g, "k")
				f.Gangs()
			}
		}(i)
	}
	wg.Wait()
	if newCount != 10 {
		t.Fatalf("%d Adds reported new, want exactly 10", newCount)
	}
}
