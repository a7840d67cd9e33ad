package topology

import "testing"

// Within: every positive request at most the free amount; a resource absent from free is
// zero; zero and negative requests ask for nothing.
func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		name      string
		req, free Resources
		want      bool
	}{
		{"empty request", Resources{}, Resources{}, true},
		{"fits exactly", Resources{"cpu": 4, "gpu": 8}, Resources{"cpu": 4, "gpu": 8}, true},
		{"fits with room", Resources{"gpu": 2}, Resources{"gpu": 8, "cpu": 1}, true},
		{"one resource short", Resources{"cpu": 4, "gpu": 8}, Resources{"cpu": 4, "gpu": 7}, false},
		{"resource absent from free", Resources{"gpu": 1}, Resources{"cpu": 64}, false},
		{"zero request of an absent resource", Resources{"gpu": 0}, Resources{}, true},
		{"negative request", Resources{"gpu": -1}, Resources{}, true},
	} {
		if got := Within(tt.req, tt.free); got != tt.want {
			t.Errorf("%s: Within(%v, %v) = %v, want %v", tt.name, tt.req, tt.free, got, tt.want)
		}
	}
}

// Without drops exactly the excluded domains and never changes its argument.
func TestWithout(t *testing.T) {
	rooms := map[string]int{"a": 1, "b": 2, "c": 0}
	got := Without(rooms, map[string]struct{}{"b": {}, "x": {}})
	if len(got) != 2 || got["a"] != 1 || got["c"] != 0 {
		t.Fatalf("Without = %v, want a:1 c:0", got)
	}
	if len(rooms) != 3 {
		t.Fatalf("Without changed its argument: %v", rooms)
	}
	if same := Without(rooms, nil); len(same) != 3 {
		t.Fatalf("Without(nil) = %v, want rooms", same)
	}
}
