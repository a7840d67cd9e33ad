package placement_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

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
