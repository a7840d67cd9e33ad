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
	if _, out := s.Pin(placement.PinRequest{Gang: "ns/g3", Owner: "u", Key: clique, Domain: "b", Nodes: domains[clique]["b"], Remaining: 0}); out != placement.Pinned {
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

	s.Drain("ns/g1", g1.ID) // 2 → 1: still forming
	if !reflect.DeepEqual(s.HeldDomainRefs(), want) {
		t.Fatalf("partial drain changed holds: %v", s.HeldDomainRefs())
	}
	s.Drain("ns/g1", g1.ID) // → 0: committed, hold lifted
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
