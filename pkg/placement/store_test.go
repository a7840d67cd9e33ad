package placement_test

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Test cluster: six nodes partitioned two ways.
//
//	key "clique": a = {n0,n1}, b = {n2,n3}, c = {n4,n5}
//	key "rack":   x = {n0,n2,n4}, y = {n1,n3}, z = {n5}
const (
	clique = "clique"
	rack   = "rack"
)

var domains = map[string]map[string][]string{
	clique: {"a": {"n0", "n1"}, "b": {"n2", "n3"}, "c": {"n4", "n5"}},
	rack:   {"x": {"n0", "n2", "n4"}, "y": {"n1", "n3"}, "z": {"n5"}},
}

var allNodes = []string{"n0", "n1", "n2", "n3", "n4", "n5"}

func nodesOf(key string) func(string) []string {
	return func(d string) []string { return append([]string(nil), domains[key][d]...) }
}

// labelsOf returns the labels of one of the test nodes.
func labelsOf(node string) map[string]string {
	l := map[string]string{}
	for key, ds := range domains {
		for d, ns := range ds {
			for _, n := range ns {
				if n == node {
					l[key] = d
				}
			}
		}
	}
	return l
}

func choose(s *placement.Store, gang, owner, key string, need int, rooms map[string]int) placement.ChooseResult {
	return s.Choose(placement.ChooseRequest{Gang: gang, Owner: owner, Key: key, Need: need, Rooms: rooms, Nodes: nodesOf(key)})
}

func mustChoose(t *testing.T, s *placement.Store, gang, key string, need int, rooms map[string]int, wantDomain string) placement.Commitment {
	t.Helper()
	res := choose(s, gang, "uid-"+gang, key, need, rooms)
	if !res.OK || res.Existing || res.Commitment.Domain != wantDomain {
		t.Fatalf("Choose(%s, need %d, %v) = ok %v existing %v domain %q; want new pin on %q",
			gang, need, rooms, res.OK, res.Existing, res.Commitment.Domain, wantDomain)
	}
	return res.Commitment
}

func TestChoosePicksBestFit(t *testing.T) {
	cases := []struct {
		name     string
		rooms    map[string]int
		need     int
		want     string // "" = none
		soleFit  bool
		wantEffs map[string]int
	}{
		{"smallest fitting room", map[string]int{"a": 18, "b": 6, "c": 4}, 4, "c", false, nil},
		{"skips too-small domains", map[string]int{"a": 18, "b": 5, "c": 2}, 4, "b", false, nil},
		{"tie → byte-wise smallest", map[string]int{"c": 6, "a": 6, "b": 6}, 4, "a", false, nil},
		{"sole fitting domain", map[string]int{"a": 2, "b": 3, "c": 4}, 4, "c", true, nil},
		{"no fitting domain", map[string]int{"a": 2, "b": 3}, 4, "", false, nil},
		{"empty room map", map[string]int{}, 1, "", false, nil},
		{"need 0 never pins", map[string]int{"a": 4}, 0, "", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			res := choose(s, "ns/g", "uid1", clique, tc.need, tc.rooms)
			if !reflect.DeepEqual(res.Effective, tc.rooms) && !(len(res.Effective) == 0 && len(tc.rooms) == 0) {
				t.Errorf("Effective = %v, want %v (nothing held)", res.Effective, tc.rooms)
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
				ID: c.ID, Nodes: domains[clique][tc.want], Remaining: tc.need, SoleFit: tc.soleFit}
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
		})
	}
}

func TestChooseZeroesDomainsHeldByOtherGangs(t *testing.T) {
	t.Run("same key", func(t *testing.T) {
		s := placement.NewStore()
		rooms := map[string]int{"a": 18, "b": 6, "c": 4}
		mustChoose(t, s, "ns/g1", clique, 4, rooms, "c")
		res := choose(s, "ns/g2", "uid-ns/g2", clique, 4, rooms)
		if want := map[string]int{"a": 18, "b": 6, "c": 0}; !reflect.DeepEqual(res.Effective, want) {
			t.Fatalf("Effective = %v, want %v", res.Effective, want)
		}
		if !res.OK || res.Commitment.Domain != "b" {
			t.Fatalf("g2 pinned %q ok=%v; want b", res.Commitment.Domain, res.OK)
		}
		if res.Commitment.SoleFit {
			t.Fatalf("g2 SoleFit = true; a and b both fit")
		}
		if got := s.Effective("ns/g3", clique, rooms, nodesOf(clique)); !reflect.DeepEqual(got, map[string]int{"a": 18, "b": 0, "c": 0}) {
			t.Fatalf("Effective for g3 = %v", got)
		}
		// The gang's own hold is never zeroed for itself.
		if got := s.Effective("ns/g1", clique, rooms, nodesOf(clique)); !reflect.DeepEqual(got, map[string]int{"a": 18, "b": 0, "c": 4}) {
			t.Fatalf("Effective for g1 = %v", got)
		}
	})
	t.Run("different key sharing nodes", func(t *testing.T) {
		s := placement.NewStore()
		// g1 holds clique a = {n0,n1}: rack x (n0) and rack y (n1) share nodes with it.
		mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2, "b": 4}, "a")
		rooms := map[string]int{"x": 3, "y": 2, "z": 4}
		res := choose(s, "ns/g2", "uid-ns/g2", rack, 2, rooms)
		if want := map[string]int{"x": 0, "y": 0, "z": 4}; !reflect.DeepEqual(res.Effective, want) {
			t.Fatalf("Effective = %v, want %v", res.Effective, want)
		}
		if !res.OK || res.Commitment.Domain != "z" || !res.Commitment.SoleFit {
			t.Fatalf("g2 = %+v; want sole-fit pin on z", res)
		}
	})
	t.Run("same value under a different key does not collide", func(t *testing.T) {
		s := placement.NewStore()
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g1", Owner: "u", Key: "k1", Domain: "d", Nodes: []string{"p1"}, Remaining: 2}); out != placement.Pinned {
			t.Fatalf("pin outcome %v", out)
		}
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g2", Owner: "u2", Key: "k2", Need: 1,
			Rooms: map[string]int{"d": 1}, Nodes: func(string) []string { return []string{"q1"} }})
		if !res.OK || res.Commitment.Domain != "d" || res.Commitment.Key != "k2" {
			t.Fatalf("Choose = %+v; want k2/d pinned (k1/d is a different domain)", res)
		}
	})
	t.Run("zero rooms stay zero and held zero rooms are not reported", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/g1", clique, 1, map[string]int{"a": 1}, "a")
		got := s.Effective("ns/g2", clique, map[string]int{"a": 0, "b": 0}, nodesOf(clique))
		if want := map[string]int{"a": 0, "b": 0}; !reflect.DeepEqual(got, want) {
			t.Fatalf("Effective = %v, want %v", got, want)
		}
	})
	t.Run("every fitting domain held → none although capacity exists", func(t *testing.T) {
		s := placement.NewStore()
		rooms := map[string]int{"a": 3, "b": 1}
		mustChoose(t, s, "ns/g1", clique, 3, rooms, "a")
		res := choose(s, "ns/g2", "u2", clique, 3, rooms)
		if res.OK || res.Existing {
			t.Fatalf("Choose = %+v; want none (reserved)", res)
		}
		if want := map[string]int{"a": 0, "b": 1}; !reflect.DeepEqual(res.Effective, want) {
			t.Fatalf("Effective = %v, want %v", res.Effective, want)
		}
		if s.Len() != 1 {
			t.Fatalf("Len = %d, want 1", s.Len())
		}
	})
	t.Run("committed pins do not hold", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g1", clique, 1, map[string]int{"a": 1}, "a")
		if r := s.Drain("ns/g1", c.ID); !r.Committed {
			t.Fatalf("Drain = %+v", r)
		}
		mustChoose(t, s, "ns/g2", clique, 1, map[string]int{"a": 1}, "a")
	})
}

// TestChooseRank: the optional rank breaks ties among equally fitting effective domains;
// it never overrides best fit or a hold.
func TestChooseRank(t *testing.T) {
	rank := func(m map[string]int) func(string) int { return func(d string) int { return m[d] } }
	t.Run("rank breaks a tie", func(t *testing.T) {
		s := placement.NewStore()
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 4, "b": 4, "c": 4}, Nodes: nodesOf(clique), Rank: rank(map[string]int{"a": 2, "b": 1, "c": 1})})
		if !res.OK || res.Commitment.Domain != "b" || res.Commitment.SoleFit {
			t.Fatalf("Choose = %+v; want b (lowest rank, then name), not sole fit", res)
		}
	})
	t.Run("rank never beats a tighter fit", func(t *testing.T) {
		s := placement.NewStore()
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 2, "b": 4}, Nodes: nodesOf(clique), Rank: rank(map[string]int{"a": 9, "b": 0})})
		if !res.OK || res.Commitment.Domain != "a" {
			t.Fatalf("Choose = %+v; want a", res)
		}
	})
	t.Run("a held domain is excluded whatever its rank", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/h", clique, 2, map[string]int{"a": 2}, "a")
		res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
			Rooms: map[string]int{"a": 4, "b": 4, "c": 4}, Nodes: nodesOf(clique), Rank: rank(map[string]int{"a": 0, "b": 2, "c": 1})})
		if !res.OK || res.Commitment.Domain != "c" {
			t.Fatalf("Choose = %+v; want c", res)
		}
	})
}

// TestTraces replays the example traces of placement.md §4.8 at the store level.
func TestTraces(t *testing.T) {
	t.Run("two gangs of 3", func(t *testing.T) {
		s := placement.NewStore()
		rooms := map[string]int{"a": 3, "b": 4}
		mustChoose(t, s, "ns/first", clique, 3, rooms, "a")
		mustChoose(t, s, "ns/second", clique, 3, rooms, "b")
	})
	t.Run("reserved then drained", func(t *testing.T) {
		s := placement.NewStore()
		rooms := map[string]int{"a": 2}
		h := mustChoose(t, s, "ns/holder", clique, 2, rooms, "a")
		if res := choose(s, "ns/second", "u", clique, 2, rooms); res.OK {
			t.Fatalf("second pinned %+v while a is held", res)
		}
		if r := s.Drain("ns/holder", h.ID); !r.Owned || r.Committed || r.Remaining != 1 {
			t.Fatalf("first drain = %+v", r)
		}
		if res := choose(s, "ns/second", "u", clique, 2, rooms); res.OK {
			t.Fatalf("second pinned %+v while holder still forming", res)
		}
		if r := s.Drain("ns/holder", h.ID); !r.Owned || !r.Committed || r.Remaining != 0 {
			t.Fatalf("last drain = %+v", r)
		}
		mustChoose(t, s, "ns/second", clique, 2, rooms, "a")
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

// TestConcurrentChooseNeverOverlaps races many gangs for a few domains under both keys: the
// forming pins that result never share a domain or a node.
func TestConcurrentChooseNeverOverlaps(t *testing.T) {
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
				g := fmt.Sprintf("ns/g%d", i)
				choose(s, g, "u", key, 1, rooms)
			}(i)
		}
		wg.Wait()
		list := s.List()
		if len(list) == 0 {
			t.Fatal("nobody pinned")
		}
		if msg := checkDisjoint(list); msg != "" {
			t.Fatalf("round %d: %s: %+v", round, msg, list)
		}
		if s.HeldDomains() != len(list) {
			t.Fatalf("HeldDomains = %d with %d forming pins", s.HeldDomains(), len(list))
		}
	}
}

// checkDisjoint reports overlapping holds among forming commitments ("" = none).
func checkDisjoint(list []placement.Commitment) string {
	refs := map[placement.DomainRef]string{}
	nodes := map[string]string{}
	for _, c := range list {
		if !c.Forming() {
			continue
		}
		ref := placement.DomainRef{Key: c.Key, Value: c.Domain}
		if g, ok := refs[ref]; ok {
			return fmt.Sprintf("domain %v held by %s and %s", ref, g, c.Gang)
		}
		refs[ref] = c.Gang
		for _, n := range c.Nodes {
			if g, ok := nodes[n]; ok && g != c.Gang {
				return fmt.Sprintf("node %s held by %s and %s", n, g, c.Gang)
			}
			nodes[n] = c.Gang
		}
	}
	return ""
}

func TestDrain(t *testing.T) {
	s := placement.NewStore()
	c := mustChoose(t, s, "ns/g", clique, 3, map[string]int{"a": 3}, "a")
	if r := s.Drain("ns/g", c.ID+1); r != (placement.DrainResult{}) {
		t.Fatalf("stale-id drain = %+v; want not owned", r)
	}
	if r := s.Drain("ns/other", c.ID); r != (placement.DrainResult{}) {
		t.Fatalf("unknown-gang drain = %+v; want not owned", r)
	}
	if got, _ := s.Get("ns/g"); got.Remaining != 3 {
		t.Fatalf("stale drains changed remaining to %d", got.Remaining)
	}
	want := []placement.DrainResult{
		{Owned: true, Remaining: 2},
		{Owned: true, Remaining: 1},
		{Owned: true, Committed: true, Remaining: 0},
		{Owned: true},
		{Owned: true},
	}
	for i, w := range want {
		if i < 2 {
			if g, held := s.NodeHeld("n0", nil); !held || g != "ns/g" {
				t.Fatalf("before drain %d: n0 held=%v by %q", i, held, g)
			}
		}
		if r := s.Drain("ns/g", c.ID); r != w {
			t.Fatalf("drain %d = %+v, want %+v", i, r, w)
		}
		got, ok := s.Get("ns/g")
		if !ok || got.Remaining < 0 {
			t.Fatalf("after drain %d: %+v,%v", i, got, ok)
		}
	}
	// The hold is lifted at 0 but the commitment stays (committed).
	if _, held := s.NodeHeld("n0", labelsOf("n0")); held {
		t.Fatal("n0 still held after drain to 0")
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
	c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: 0})
	if out != placement.Pinned || c.Forming() {
		t.Fatalf("Pin = %+v,%v; want committed pin", c, out)
	}
	if r := s.Drain("ns/g", c.ID); r != (placement.DrainResult{Owned: true}) {
		t.Fatalf("drain of committed pin = %+v", r)
	}
	if s.HeldDomains() != 0 {
		t.Fatalf("committed pin holds %d domains", s.HeldDomains())
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
	s.Drain("ns/g", cm.ID)
	check(cm.ID, true, false)
	s.Drain("ns/g", cm.ID)
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
		before := s.List()
		for _, id := range []uint64{c.ID + 1, c.ID - 1 + 100} {
			if got, ok := s.Release("ns/g", id, func(placement.Commitment) { called = true }); ok || !reflect.DeepEqual(got, placement.Commitment{}) {
				t.Fatalf("Release(stale %d) = %+v,%v", id, got, ok)
			}
		}
		if called {
			t.Fatal("callback ran for a stale release")
		}
		if after := s.List(); !reflect.DeepEqual(before, after) {
			t.Fatalf("stale release changed the store: %+v → %+v", before, after)
		}
		if g, held := s.NodeHeld("n1", nil); !held || g != "ns/g" {
			t.Fatal("stale release lifted the hold")
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
	t.Run("owner id releases and runs the callback once", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		var seen []placement.Commitment
		got, ok := s.Release("ns/g", c.ID, func(rc placement.Commitment) { seen = append(seen, rc) })
		if !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("Release = %+v,%v; want %+v", got, ok, c)
		}
		if len(seen) != 1 || !reflect.DeepEqual(seen[0], c) {
			t.Fatalf("callback saw %+v", seen)
		}
		if s.Len() != 0 || s.HeldDomains() != 0 {
			t.Fatalf("Len=%d HeldDomains=%d after release", s.Len(), s.HeldDomains())
		}
		for _, n := range allNodes {
			if _, held := s.NodeHeld(n, labelsOf(n)); held {
				t.Fatalf("%s still held", n)
			}
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
	t.Run("AnyID releases a committed pin", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 1, map[string]int{"a": 1}, "a")
		s.Drain("ns/g", c.ID)
		if _, ok := s.Release("ns/g", placement.AnyID, nil); !ok || s.Len() != 0 {
			t.Fatalf("release of committed pin: ok=%v len=%d", ok, s.Len())
		}
	})
	t.Run("releasing a committed pin keeps another gang's hold on the same domain", func(t *testing.T) {
		s := placement.NewStore()
		c1 := mustChoose(t, s, "ns/g1", clique, 1, map[string]int{"a": 1}, "a")
		s.Drain("ns/g1", c1.ID) // committed, hold lifted
		mustChoose(t, s, "ns/g2", clique, 2, map[string]int{"a": 2}, "a")
		if _, ok := s.Release("ns/g1", c1.ID, nil); !ok {
			t.Fatal("release failed")
		}
		if g, held := s.NodeHeld("n0", nil); !held || g != "ns/g2" {
			t.Fatalf("n0 held=%v by %q; want ns/g2", held, g)
		}
		if g, held := s.NodeHeld("new", map[string]string{clique: "a"}); !held || g != "ns/g2" {
			t.Fatalf("label hold lost: held=%v by %q", held, g)
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
		nodes := []string{"n0", "n1"}
		c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Nodes: nodes, Remaining: 3, SoleFit: true})
		if out != placement.Pinned {
			t.Fatalf("outcome %v", out)
		}
		want := placement.Commitment{Gang: "ns/g", Key: clique, Domain: "a", Owner: "u", ID: c.ID, Nodes: []string{"n0", "n1"}, Remaining: 3, SoleFit: true}
		if !reflect.DeepEqual(c, want) || c.ID == placement.AnyID {
			t.Fatalf("Pin = %+v, want %+v", c, want)
		}
		nodes[0] = "mutated" // the store keeps its own copy of the request's nodes
		if g, held := s.NodeHeld("n0", nil); !held || g != "ns/g" {
			t.Fatalf("n0 held=%v by %q after mutating the request slice", held, g)
		}
		if _, held := s.NodeHeld("mutated", nil); held {
			t.Fatal("store aliases the request's node slice")
		}
	})
	t.Run("already pinned", func(t *testing.T) {
		s := placement.NewStore()
		c1, _ := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: 1})
		c2, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "other", Key: clique, Domain: "b", Nodes: domains[clique]["b"], Remaining: 5})
		if out != placement.AlreadyPinned || !reflect.DeepEqual(c1, c2) {
			t.Fatalf("second Pin = %+v,%v; want the existing %+v", c2, out, c1)
		}
		if s.Len() != 1 || s.HeldDomains() != 1 {
			t.Fatalf("Len=%d HeldDomains=%d", s.Len(), s.HeldDomains())
		}
		// Already pinned wins over held-by-other.
		mustChooseNone := choose(s, "ns/h", "u", clique, 1, map[string]int{"a": 1})
		if mustChooseNone.OK {
			t.Fatalf("h pinned a held domain: %+v", mustChooseNone)
		}
	})
	t.Run("held by other: same domain", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2}, "a")
		c, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: 1})
		if out != placement.HeldByOther || !reflect.DeepEqual(c, placement.Commitment{}) {
			t.Fatalf("Pin = %+v,%v; want HeldByOther", c, out)
		}
		if _, ok := s.Get("ns/g2"); ok || s.Len() != 1 {
			t.Fatal("HeldByOther recorded a commitment")
		}
	})
	t.Run("held by other: same domain ref, node list empty", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2}, "a")
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: clique, Domain: "a", Remaining: 1}); out != placement.HeldByOther {
			t.Fatalf("outcome %v; want HeldByOther", out)
		}
	})
	t.Run("held by other: different key sharing a node", func(t *testing.T) {
		s := placement.NewStore()
		mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"c": 2}, "c") // n4, n5
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: rack, Domain: "z", Nodes: domains[rack]["z"], Remaining: 1}); out != placement.HeldByOther {
			t.Fatalf("rack z (n5) outcome %v; want HeldByOther", out)
		}
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: rack, Domain: "y", Nodes: domains[rack]["y"], Remaining: 1}); out != placement.Pinned {
			t.Fatalf("rack y (n1,n3) outcome %v; want Pinned", out)
		}
	})
	t.Run("a committed pin does not block", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g1", clique, 1, map[string]int{"a": 1}, "a")
		s.Drain("ns/g1", c.ID)
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: 2}); out != placement.Pinned {
			t.Fatalf("outcome %v; want Pinned", out)
		}
	})
	t.Run("remaining 0 or negative is committed at once", func(t *testing.T) {
		for _, rem := range []int{0, -1, -7} {
			s := placement.NewStore()
			c, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: rem})
			if out != placement.Pinned || c.Remaining != 0 || c.Forming() {
				t.Fatalf("rem %d: Pin = %+v,%v", rem, c, out)
			}
			if s.HeldDomains() != 0 {
				t.Fatalf("rem %d: committed pin holds", rem)
			}
			if _, held := s.NodeHeld("n0", labelsOf("n0")); held {
				t.Fatalf("rem %d: n0 held by a committed pin", rem)
			}
			if o, cm := s.Committed("ns/g", c.ID); !o || !cm {
				t.Fatalf("rem %d: Committed = %v,%v", rem, o, cm)
			}
		}
	})
	t.Run("own domain is not held by other", func(t *testing.T) {
		s := placement.NewStore()
		c := mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
		s.Release("ns/g", c.ID, nil)
		if _, out := s.Pin(placement.PinRequest{Gang: "ns/g", Owner: "u", Key: clique, Domain: "a", Nodes: domains[clique]["a"], Remaining: 2}); out != placement.Pinned {
			t.Fatalf("re-pin after release: %v", out)
		}
	})
}

func TestNodeHeld(t *testing.T) {
	s := placement.NewStore()
	mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2}, "a")               // n0 n1
	mustChoose(t, s, "ns/g2", rack, 1, map[string]int{"z": 1, "x": 3}, "z")         // n5
	c3 := mustChoose(t, s, "ns/g3", clique, 1, map[string]int{"b": 2, "c": 0}, "b") // n2 n3
	s.Drain("ns/g3", c3.ID)                                                         // committed: no hold

	cases := []struct {
		name   string
		node   string
		labels map[string]string
		want   string // "" = not held
	}{
		{"node in set, no labels", "n0", nil, "ns/g1"},
		{"node in set, with labels", "n1", labelsOf("n1"), "ns/g1"},
		{"node of another key's domain", "n5", nil, "ns/g2"},
		{"node of a committed pin", "n2", labelsOf("n2"), ""},
		{"free node", "n4", labelsOf("n4"), ""},
		{"joined clique a after the pin", "n9", map[string]string{clique: "a"}, "ns/g1"},
		{"joined rack z after the pin", "n9", map[string]string{rack: "z"}, "ns/g2"},
		{"joined committed clique b", "n9", map[string]string{clique: "b"}, ""},
		{"label of an unheld domain", "n9", map[string]string{clique: "c", rack: "y"}, ""},
		{"empty label value", "n9", map[string]string{clique: ""}, ""},
		{"held value under an unrelated key", "n9", map[string]string{"other": "a"}, ""},
		{"unknown node without labels", "n9", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, held := s.NodeHeld(tc.node, tc.labels)
			if held != (tc.want != "") || g != tc.want {
				t.Fatalf("NodeHeld(%s, %v) = %q,%v; want %q", tc.node, tc.labels, g, held, tc.want)
			}
		})
	}
	if s.HeldDomains() != 2 {
		t.Fatalf("HeldDomains = %d, want 2", s.HeldDomains())
	}
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
		c, out := s.Pin(placement.PinRequest{Gang: "ns/g2", Owner: "u", Key: clique, Domain: "b", Nodes: domains[clique]["b"], Remaining: 1})
		if out != placement.Pinned {
			t.Fatalf("pin outcome %v", out)
		}
		next(c)
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

// TestGetReturnsIndependentCopy: Get is documented to return a copy of the commitment; a
// caller writing into the returned node list must not change the store's hold.
func TestGetReturnsIndependentCopy(t *testing.T) {
	s := placement.NewStore()
	mustChoose(t, s, "ns/g", clique, 2, map[string]int{"a": 2}, "a")
	c, _ := s.Get("ns/g")
	c.Nodes[0] = "elsewhere"
	if again, _ := s.Get("ns/g"); again.Nodes[0] != "n0" {
		t.Fatalf("mutating Get's result changed the store: nodes now %v", again.Nodes)
	}
	s.Release("ns/g", placement.AnyID, nil)
	if g, held := s.NodeHeld("n0", nil); held {
		t.Fatalf("n0 still held by %q after release", g)
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
