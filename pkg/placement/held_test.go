package placement_test

import (
	"reflect"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// HeldDomainRefs follows the forming commitments: pin adds, drain to 0 and release remove,
// a committed adoption never holds.
func TestHeldDomainRefs(t *testing.T) {
	s := placement.NewStore()
	if got := s.HeldDomainRefs(); len(got) != 0 {
		t.Fatalf("empty store holds %v", got)
	}
	g1 := mustChoose(t, s, "ns/g1", clique, 2, map[string]int{"a": 2, "b": 3}, "a")
	g2 := mustChoose(t, s, "ns/g2", rack, 1, map[string]int{"z": 1}, "z")
	if _, out := s.Pin(placement.PinRequest{Gang: "ns/g3", Owner: "u", Key: clique, Domain: "b", Reserved: slots(1, 1, "n2"), Remaining: 0}); out != placement.Pinned {
		t.Fatalf("adopt committed: %v", out)
	}
	want := []placement.DomainRef{{Key: clique, Value: "a"}, {Key: rack, Value: "z"}}
	got := s.HeldDomainRefs()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("HeldDomainRefs = %v, want %v", got, want)
	}
	if len(got) != s.HeldDomains() {
		t.Fatalf("HeldDomainRefs has %d entries, HeldDomains = %d", len(got), s.HeldDomains())
	}
	got[0].Value = "mutated" // the result is a copy
	if !reflect.DeepEqual(s.HeldDomainRefs(), want) {
		t.Fatal("HeldDomainRefs aliases store state")
	}

	s.Drain("ns/g1", g1.ID, "n0") // 2 → 1: still forming
	if !reflect.DeepEqual(s.HeldDomainRefs(), want) {
		t.Fatalf("partial drain changed holds: %v", s.HeldDomainRefs())
	}
	s.Drain("ns/g1", g1.ID, "n1") // → 0: committed, hold lifted
	if got, want := s.HeldDomainRefs(), []placement.DomainRef{{Key: rack, Value: "z"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after commit: %v, want %v", got, want)
	}
	if _, ok := s.Release("ns/g2", g2.ID, nil); !ok {
		t.Fatal("release g2")
	}
	if got := s.HeldDomainRefs(); len(got) != 0 {
		t.Fatalf("after release: %v, want none", got)
	}
}

// Several gangs may form in one domain: it stays held while any of them forms, under its key.
func TestHeldWithTwoGangsInOneDomain(t *testing.T) {
	s := placement.NewStore()
	capacity := uniform(8, 4, allNodes...).capacity()
	a := mustPin(t, s, "ns/a", clique, "a", slots(1, 1, "n0"), 1, capacity)
	b := mustPin(t, s, "ns/b", clique, "a", slots(1, 1, "n1"), 2, capacity)
	mustPin(t, s, "ns/c", rack, "x", slots(1, 1, "n0"), 1, capacity)
	ca := placement.DomainRef{Key: clique, Value: "a"}
	rx := placement.DomainRef{Key: rack, Value: "x"}
	check := func(step string, refs []placement.DomainRef, keys []string) {
		t.Helper()
		if got := s.HeldDomainRefs(); len(got) != len(refs) || (len(refs) > 0 && !reflect.DeepEqual(got, refs)) {
			t.Fatalf("%s: HeldDomainRefs = %v, want %v", step, got, refs)
		}
		if s.HeldDomains() != len(refs) {
			t.Fatalf("%s: HeldDomains = %d, want %d", step, s.HeldDomains(), len(refs))
		}
		if got := s.HeldKeys(); len(got) != len(keys) || (len(keys) > 0 && !reflect.DeepEqual(got, keys)) {
			t.Fatalf("%s: HeldKeys = %v, want %v", step, got, keys)
		}
	}
	check("three forming", []placement.DomainRef{ca, rx}, []string{clique, rack})
	s.Drain("ns/a", a.ID, "n0") // a commits; b still forms in clique a
	check("a committed", []placement.DomainRef{ca, rx}, []string{clique, rack})
	s.Release("ns/c", placement.AnyID, nil)
	check("c released", []placement.DomainRef{ca}, []string{clique})
	s.Drain("ns/b", b.ID, "n1")
	check("b half drained", []placement.DomainRef{ca}, []string{clique})
	s.Expire("ns/b", b.ID, nil)
	check("b expired", nil, nil)
}

// FormingWithPrefix counts the forming commitments of a namespace, the asking gang's own left
// out; committed ones do not count.
func TestFormingWithPrefix(t *testing.T) {
	s := placement.NewStore()
	mustPin(t, s, "ns1/a", "k", "d", nil, 1, nil)
	mustPin(t, s, "ns1/b", "k", "d", nil, 2, nil)
	mustPin(t, s, "ns1/c", "k", "d", nil, 0, nil)
	mustPin(t, s, "ns2/a", "k", "d", nil, 1, nil)
	cases := []struct {
		prefix, gang string
		want         int
	}{
		{"ns1/", "", 2},
		{"ns1/", "ns1/a", 1},
		{"ns1/", "ns1/c", 2},
		{"ns2/", "ns1/a", 1},
		{"ns3/", "", 0},
		{"", "", 3},
	}
	for _, tc := range cases {
		if got := s.FormingWithPrefix(tc.prefix, tc.gang); got != tc.want {
			t.Errorf("FormingWithPrefix(%q, %q) = %d, want %d", tc.prefix, tc.gang, got, tc.want)
		}
	}
}
