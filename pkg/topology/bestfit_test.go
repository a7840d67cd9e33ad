package topology

import (
	"reflect"
	"testing"
)

func TestBestFit(t *testing.T) {
	// Every reference case of placement.md §4.4, then extra edges.
	cases := []struct {
		name   string
		rooms  map[string]int
		size   int
		want   string
		wantOK bool
	}{
		{"ref: {} 4 → none", map[string]int{}, 4, "", false},
		{"ref: {a:2,b:3} 4 → none", map[string]int{"a": 2, "b": 3}, 4, "", false},
		{"ref: {a:8} 4 → a", map[string]int{"a": 8}, 4, "a", true},
		{"ref: {a:18,b:6,c:4} 4 → c", map[string]int{"a": 18, "b": 6, "c": 4}, 4, "c", true},
		{"ref: {a:18,b:5,c:2} 4 → b", map[string]int{"a": 18, "b": 5, "c": 2}, 4, "b", true},
		{"ref: {big:18,exact:4} 4 → exact", map[string]int{"big": 18, "exact": 4}, 4, "exact", true},
		{"ref: {z:6,a:6,m:6} 4 → a", map[string]int{"z": 6, "a": 6, "m": 6}, 4, "a", true},
		{"ref: {a:3,b:1} 1 → b", map[string]int{"a": 3, "b": 1}, 1, "b", true},
		{"ref: {a:18} 18 → a", map[string]int{"a": 18}, 18, "a", true},
		{"ref: size 0 → none", map[string]int{"a": 18, "b": 4}, 0, "", false},
		{"ref: size -3 → none", map[string]int{"a": 18, "b": 4}, -3, "", false},
		{"nil map", nil, 1, "", false},
		{"zero rooms never fit", map[string]int{"a": 0, "b": 0}, 1, "", false},
		{"negative rooms never fit", map[string]int{"a": -5}, 1, "", false},
		{"size 0 with zero room → none", map[string]int{"a": 0}, 0, "", false},
		{"byte-wise order: upper case sorts first", map[string]int{"a": 4, "B": 4}, 4, "B", true},
		{"byte-wise order: prefix sorts first", map[string]int{"ab": 4, "a": 4, "b": 4}, 4, "a", true},
		{"byte-wise order: digits before letters", map[string]int{"a": 4, "9": 4, "10": 4}, 4, "10", true},
		{"tie only among the smallest fitting room", map[string]int{"a": 9, "y": 5, "x": 5, "b": 3}, 4, "x", true},
		{"empty domain value is a valid key", map[string]int{"": 4, "a": 4}, 4, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ { // map order varies between calls
				got, ok := BestFit(tc.rooms, tc.size)
				if got != tc.want || ok != tc.wantOK {
					t.Fatalf("BestFit(%v, %d) = %q,%v; want %q,%v", tc.rooms, tc.size, got, ok, tc.want, tc.wantOK)
				}
			}
		})
	}
}

// TestBestFitRanked covers the rank tie-breaker (gang soft spread): among domains whose
// room equals the best fit's room the lowest rank wins, then the byte-wise smallest value;
// rank never prefers a domain with more room.
func TestBestFitRanked(t *testing.T) {
	ranks := func(m map[string]int) func(string) int {
		return func(d string) int { return m[d] }
	}
	cases := []struct {
		name   string
		rooms  map[string]int
		size   int
		rank   func(string) int
		want   string
		wantOK bool
	}{
		{"nil rank is BestFit", map[string]int{"z": 6, "a": 6, "m": 6}, 4, nil, "a", true},
		{"rank breaks a tie", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 2, "m": 1, "z": 1}), "m", true},
		{"lowest rank wins regardless of name", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 5, "m": 3, "z": 0}), "z", true},
		{"equal ranks fall back to name", map[string]int{"z": 6, "a": 6, "m": 6}, 4, ranks(map[string]int{"a": 1, "m": 1, "z": 1}), "a", true},
		{"rank never prefers more room", map[string]int{"a": 4, "b": 6}, 4, ranks(map[string]int{"a": 9, "b": 0}), "a", true},
		{"rank ignores domains that do not fit", map[string]int{"a": 2, "b": 6, "c": 6}, 4, ranks(map[string]int{"a": -9, "b": 1, "c": 0}), "c", true},
		{"rank ignores larger rooms among ties", map[string]int{"a": 5, "b": 5, "c": 9}, 4, ranks(map[string]int{"a": 3, "b": 2, "c": -1}), "b", true},
		{"negative ranks", map[string]int{"a": 4, "b": 4}, 4, ranks(map[string]int{"a": 0, "b": -1}), "b", true},
		{"no fitting domain", map[string]int{"a": 2}, 4, ranks(nil), "", false},
		{"size 0", map[string]int{"a": 4}, 0, ranks(nil), "", false},
		{"size -3", map[string]int{"a": 4}, -3, ranks(nil), "", false},
		{"empty map", map[string]int{}, 1, ranks(nil), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				got, ok := BestFitRanked(tc.rooms, tc.size, tc.rank)
				if got != tc.want || ok != tc.wantOK {
					t.Fatalf("BestFitRanked(%v, %d) = %q,%v; want %q,%v", tc.rooms, tc.size, got, ok, tc.want, tc.wantOK)
				}
			}
		})
	}
}

func TestLargest(t *testing.T) {
	cases := []struct {
		rooms    map[string]int
		want     string
		wantRoom int
		wantOK   bool
	}{
		{map[string]int{}, "", 0, false},
		{nil, "", 0, false},
		{map[string]int{"a": 0}, "a", 0, true},
		{map[string]int{"a": 3, "b": 7, "c": 5}, "b", 7, true},
		{map[string]int{"z": 7, "b": 7, "m": 7}, "b", 7, true},
		{map[string]int{"a": -1, "b": -2}, "a", -1, true},
	}
	for _, tc := range cases {
		for i := 0; i < 20; i++ {
			d, r, ok := Largest(tc.rooms)
			if d != tc.want || r != tc.wantRoom || ok != tc.wantOK {
				t.Fatalf("Largest(%v) = %q,%d,%v; want %q,%d,%v", tc.rooms, d, r, ok, tc.want, tc.wantRoom, tc.wantOK)
			}
		}
	}
}

func TestCountFitting(t *testing.T) {
	cases := []struct {
		rooms map[string]int
		size  int
		want  int
	}{
		{nil, 1, 0},
		{map[string]int{"a": 18, "b": 6, "c": 4}, 4, 3},
		{map[string]int{"a": 18, "b": 5, "c": 2}, 4, 2},
		{map[string]int{"a": 2, "b": 3}, 4, 0},
		{map[string]int{"a": 0, "b": 3}, 0, 2},
	}
	for _, tc := range cases {
		if got := CountFitting(tc.rooms, tc.size); got != tc.want {
			t.Errorf("CountFitting(%v, %d) = %d, want %d", tc.rooms, tc.size, got, tc.want)
		}
	}
}

func TestRooms(t *testing.T) {
	plans := map[string]*DomainPlan{
		"a": {Domain: "a", Room: 3},
		"b": {Domain: "b", Room: 0},
	}
	if got, want := Rooms(plans), map[string]int{"a": 3, "b": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Rooms = %v, want %v", got, want)
	}
	if got := Rooms(nil); len(got) != 0 {
		t.Fatalf("Rooms(nil) = %v", got)
	}
}
