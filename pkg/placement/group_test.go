package placement_test

import (
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// TestPinGroup: partners pin together, all or none; two partners never count the same slot;
// a refusal leaves the store as it was.
func TestPinGroup(t *testing.T) {
	c := uniform(8, 110, "n0", "n1", "n2", "n3")
	req := func(gang string, nodes ...string) placement.PinRequest {
		return placement.PinRequest{Gang: gang, Owner: "u-" + gang, Key: "k", Domain: "d",
			Reserved: slots(1, 8, nodes...), Capacity: c.capacity(), Remaining: len(nodes), MinMember: len(nodes)}
	}
	t.Run("both fit", func(t *testing.T) {
		s := placement.NewStore()
		got, out, at := s.PinGroup([]placement.PinRequest{req("ns/a", "n0", "n1"), req("ns/b", "n2", "n3")})
		if out != placement.Pinned || at != -1 || len(got) != 2 {
			t.Fatalf("PinGroup = %v, %v, %d; want 2 pinned", got, out, at)
		}
		if got[0].ID == got[1].ID || got[0].Gang != "ns/a" || got[1].Remaining != 2 {
			t.Errorf("commitments %+v", got)
		}
		if s.Len() != 2 || s.HeldDomains() != 1 {
			t.Errorf("Len %d HeldDomains %d, want 2 and 1", s.Len(), s.HeldDomains())
		}
		if r := s.ReservedOn("n2", "ns/a"); r.Pods != 1 || len(r.Gangs) != 1 || r.Gangs[0] != "ns/b" {
			t.Errorf("ReservedOn(n2) = %+v, want b's slot", r)
		}
	})
	t.Run("partners overlap: nothing pinned", func(t *testing.T) {
		s := placement.NewStore()
		gen := s.Generation()
		_, out, at := s.PinGroup([]placement.PinRequest{req("ns/a", "n0", "n1"), req("ns/b", "n1", "n2")})
		if out != placement.HeldByOther || at != 1 {
			t.Fatalf("PinGroup = %v at %d, want HeldByOther at 1", out, at)
		}
		if s.Len() != 0 || s.HeldDomains() != 0 || len(s.HeldKeys()) != 0 || s.ReservedOn("n0", "").Pods != 0 {
			t.Errorf("store not empty after a refusal: %d pins, %d held domains", s.Len(), s.HeldDomains())
		}
		if s.Generation() != gen {
			t.Errorf("generation moved on a refusal")
		}
		// the store still works: a is pinned alone afterwards
		if _, out := s.Pin(req("ns/a", "n0", "n1")); out != placement.Pinned {
			t.Errorf("Pin after refusal = %v", out)
		}
	})
	t.Run("one partner already pinned", func(t *testing.T) {
		s := placement.NewStore()
		if _, out := s.Pin(req("ns/b", "n3")); out != placement.Pinned {
			t.Fatal(out)
		}
		_, out, at := s.PinGroup([]placement.PinRequest{req("ns/a", "n0"), req("ns/b", "n1")})
		if out != placement.AlreadyPinned || at != 1 {
			t.Fatalf("PinGroup = %v at %d, want AlreadyPinned at 1", out, at)
		}
		if _, ok := s.Get("ns/a"); ok || s.Len() != 1 {
			t.Errorf("a pinned after a refusal")
		}
	})
	t.Run("committed partner holds nothing", func(t *testing.T) {
		s := placement.NewStore()
		r := req("ns/a", "n0")
		r.Remaining = 0
		got, out, _ := s.PinGroup([]placement.PinRequest{r, req("ns/b", "n0")})
		if out != placement.Pinned || got[0].Forming() || len(got[0].Reserved) != 0 {
			t.Fatalf("PinGroup = %+v, %v", got, out)
		}
	})
	t.Run("empty", func(t *testing.T) {
		s := placement.NewStore()
		if got, out, _ := s.PinGroup(nil); out != placement.Pinned || len(got) != 0 {
			t.Errorf("PinGroup(nil) = %v, %v", got, out)
		}
	})
}
