package placement_test

import (
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// TestRegrow: Regrow only raises remaining, only for a forming commitment the attempt id owns,
// and the raised count is what the next drains count down from.
func TestRegrow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		remaining int // of the pin (0: committed)
		staleID   bool
		to        int
		changed   bool
		want      int
	}{
		{"raised", 1, false, 2, true, 2},
		{"never lowered", 3, false, 2, false, 3},
		{"equal", 2, false, 2, false, 2},
		{"a stale attempt id", 1, true, 2, false, 1},
		{"a committed gang", 0, false, 2, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := placement.NewStore()
			c := mustPin(t, s, "ns/g", clique, "a", nil, tc.remaining, roomy())
			id := c.ID
			if tc.staleID {
				id++
			}
			got, changed := s.Regrow("ns/g", id, tc.to)
			if changed != tc.changed || (changed && got.Remaining != tc.want) {
				t.Fatalf("Regrow = %+v, %v; want changed %v with remaining %d", got, changed, tc.changed, tc.want)
			}
			if cur, _ := s.Get("ns/g"); cur.Remaining != tc.want {
				t.Fatalf("remaining %d, want %d", cur.Remaining, tc.want)
			}
		})
	}
	t.Run("drains count from the raised value", func(t *testing.T) {
		s := placement.NewStore()
		c := mustPin(t, s, "ns/g", clique, "a", nil, 1, roomy())
		s.Regrow("ns/g", c.ID, 2)
		if r := s.Drain("ns/g", c.ID, "n0"); r.Committed || r.Remaining != 1 {
			t.Fatalf("first drain after the raise = %+v, want remaining 1", r)
		}
		if r := s.Drain("ns/g", c.ID, "n1"); !r.Committed {
			t.Fatalf("second drain = %+v, want the commit", r)
		}
	})
}
