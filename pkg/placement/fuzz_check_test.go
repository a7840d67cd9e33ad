package placement_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// checkStore compares the whole store with the model and checks the invariants.
func checkStore(t *testing.T, where string, s *placement.Store, m *model) {
	t.Helper()
	if s.Len() != len(m.pins) {
		t.Fatalf("%s: Len = %d, model %d", where, s.Len(), len(m.pins))
	}
	list := s.List()
	var want []placement.Commitment
	held := map[placement.DomainRef]bool{}
	keys := map[string]bool{}
	for _, g := range slices.Sorted(maps.Keys(m.pins)) {
		c := m.pins[g]
		want = append(want, c)
		if c.Forming() {
			held[placement.DomainRef{Key: c.Key, Value: c.Domain}] = true
			keys[c.Key] = true
		}
	}
	if len(list) != len(want) || (len(list) > 0 && !reflect.DeepEqual(list, want)) {
		t.Fatalf("%s: List = %+v\nmodel %+v", where, list, want)
	}
	// The invariant, from the store's own commitments: on every node the forming gangs'
	// reservations together fit the node's current free room.
	sums := map[string]*placement.Reserved{}
	for _, c := range list {
		if c.Remaining < 0 {
			t.Fatalf("%s: %s has Remaining %d", where, c.Gang, c.Remaining)
		}
		if !c.Forming() && len(c.Reserved) != 0 {
			t.Fatalf("%s: committed %s reserves %v", where, c.Gang, c.Reserved)
		}
		if c.Reserved.Members() > c.Remaining {
			t.Fatalf("%s: %s reserves %d members with %d remaining", where, c.Gang, c.Reserved.Members(), c.Remaining)
		}
		if got, ok := s.Get(c.Gang); !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: Get(%s) = %+v,%v; List has %+v", where, c.Gang, got, ok, c)
		}
		for n, sl := range c.Reserved {
			if sl.Count <= 0 {
				continue
			}
			if sums[n] == nil {
				sums[n] = &placement.Reserved{Resources: topology.Resources{}}
			}
			sums[n].Pods += int64(sl.Count)
			for name, q := range sl.Each {
				sums[n].Resources[name] += q * int64(sl.Count)
			}
		}
	}
	for n, sum := range sums {
		f, ok := m.free[n]
		if !ok {
			t.Fatalf("%s: unknown node %s reserved: %+v", where, n, sum)
		}
		if sum.Pods > f.pods {
			t.Fatalf("%s: node %s: %d pod slots reserved, %d free\n%+v", where, n, sum.Pods, f.pods, list)
		}
		for name, q := range sum.Resources {
			if q > f.free[name] {
				t.Fatalf("%s: node %s: %d %s reserved, %d free\n%+v", where, n, q, name, f.free[name], list)
			}
		}
	}
	for _, n := range append([]string{"ghost"}, fuzzNodes...) {
		for _, except := range append([]string{""}, fuzzGangs...) {
			if got, want := normReserved(s.ReservedOn(n, except)), m.reservedOn(n, except); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: ReservedOn(%s, %q) = %+v; model %+v", where, n, except, got, want)
			}
		}
	}
	for _, except := range append([]string{""}, fuzzGangs...) {
		got := s.ReservedExcept(except)
		wantEx := map[string]placement.Reserved{}
		for _, n := range fuzzNodes {
			if r := m.reservedOn(n, except); len(r.Gangs) > 0 {
				wantEx[n] = r
			}
		}
		if len(got) != len(wantEx) {
			t.Fatalf("%s: ReservedExcept(%q) = %+v; model %+v", where, except, got, wantEx)
		}
		for n, r := range got {
			if !reflect.DeepEqual(normReserved(r), wantEx[n]) {
				t.Fatalf("%s: ReservedExcept(%q)[%s] = %+v; model %+v", where, except, n, r, wantEx[n])
			}
		}
	}
	refs := s.HeldDomainRefs()
	if len(refs) != len(held) || s.HeldDomains() != len(held) {
		t.Fatalf("%s: HeldDomainRefs = %v (HeldDomains %d); model %v", where, refs, s.HeldDomains(), held)
	}
	for _, r := range refs {
		if !held[r] {
			t.Fatalf("%s: HeldDomainRefs = %v; model %v", where, refs, held)
		}
	}
	if got := s.HeldKeys(); len(got) != len(keys) || (len(got) > 0 && !reflect.DeepEqual(got, slices.Sorted(maps.Keys(keys)))) {
		t.Fatalf("%s: HeldKeys = %v; model %v", where, got, keys)
	}
}

// TestStoreModel runs the fuzz body over the seeds and a fixed set of pseudo-random
// sequences, so the model check runs on every go test.
func TestStoreModel(t *testing.T) {
	for i, seed := range fuzzSeeds {
		t.Run(fmt.Sprintf("seed%d", i), func(t *testing.T) { runStoreModel(t, seed) })
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		data := make([]byte, 32+r.IntN(224))
		for j := range data {
			data[j] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprintf("random%d", i), func(t *testing.T) { runStoreModel(t, data) })
	}
}
