package placement_test

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

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
