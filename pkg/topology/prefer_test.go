package topology

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestBestFitPreferred(t *testing.T) {
	prefs := func(m map[string]int64) func(string) int64 { return func(d string) int64 { return m[d] } }
	cases := []struct {
		name   string
		rooms  map[string]int
		size   int
		prefer map[string]int64 // nil: no preferences
		rank   map[string]int
		want   string
		wantOK bool
	}{
		{"no preferences: best fit", map[string]int{"a": 18, "b": 6, "c": 4}, 4, nil, nil, "c", true},
		{"preference beats best fit", map[string]int{"a": 18, "b": 6, "c": 4}, 4, map[string]int64{"a": 200}, nil, "a", true},
		{"equal preferences: best fit", map[string]int{"a": 18, "b": 6, "c": 4}, 4, map[string]int64{"a": 50, "b": 50, "c": 50}, nil, "c", true},
		{"among the preferred, best fit", map[string]int{"a": 18, "b": 6, "c": 4}, 4, map[string]int64{"a": 100, "b": 100}, nil, "b", true},
		{"a preferred domain that does not fit loses", map[string]int{"a": 3, "b": 6}, 4, map[string]int64{"a": 400}, nil, "b", true},
		{"nothing fits", map[string]int{"a": 3}, 4, map[string]int64{"a": 400}, nil, "", false},
		{"size 0: none", map[string]int{"a": 3}, 0, map[string]int64{"a": 1}, nil, "", false},
		{"rank breaks ties among the preferred and tightest", map[string]int{"x": 6, "y": 6, "z": 4}, 4, map[string]int64{"x": 9, "y": 9}, map[string]int{"x": 2, "y": 1}, "y", true},
		{"rank never beats a tighter preferred domain", map[string]int{"x": 8, "y": 6}, 4, map[string]int64{"x": 9, "y": 9}, map[string]int{"x": 0, "y": 5}, "y", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prefer func(string) int64
			if tc.prefer != nil {
				prefer = prefs(tc.prefer)
			}
			var rank func(string) int
			if tc.rank != nil {
				rank = func(d string) int { return tc.rank[d] }
			}
			for i := 0; i < 10; i++ { // map order varies between calls
				got, ok := BestFitPreferred(tc.rooms, tc.size, prefer, rank)
				if got != tc.want || ok != tc.wantOK {
					t.Fatalf("BestFitPreferred = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
				}
			}
		})
	}
}

// bruteBestFitPreferred sorts every fitting domain by (preference desc, room, rank, value).
func bruteBestFitPreferred(rooms map[string]int, size int, prefer func(string) int64, rank func(string) int) (string, bool) {
	var fit []string
	for d, r := range rooms {
		if size > 0 && r >= size {
			fit = append(fit, d)
		}
	}
	if len(fit) == 0 {
		return "", false
	}
	slices.SortFunc(fit, func(a, b string) int {
		if prefer != nil && prefer(a) != prefer(b) {
			if prefer(a) > prefer(b) {
				return -1
			}
			return 1
		}
		if rooms[a] != rooms[b] {
			return rooms[a] - rooms[b]
		}
		if rank != nil && rank(a) != rank(b) {
			return rank(a) - rank(b)
		}
		return strings.Compare(a, b)
	})
	return fit[0], true
}

// Without preferences (nil, or the same for every domain) the choice is exactly today's
// (BestFitRanked) on 10,000 random instances, and with them it matches the brute-force order.
func TestBestFitPreferredRandom(t *testing.T) {
	r := rand.New(rand.NewSource(39))
	for i := 0; i < 10000; i++ {
		rooms := map[string]int{}
		prefs, ranks := map[string]int64{}, map[string]int{}
		for d := 0; d < 1+r.Intn(8); d++ {
			name := string(rune('a' + r.Intn(12)))
			rooms[name] = r.Intn(10) - 1
			prefs[name] = int64(r.Intn(3) * 50)
			ranks[name] = r.Intn(3)
		}
		size := r.Intn(7)
		rank := func(d string) int { return ranks[d] }
		if r.Intn(2) == 0 {
			rank = nil
		}
		today, todayOK := BestFitRanked(rooms, size, rank)
		constant := int64(r.Intn(100))
		for _, prefer := range []func(string) int64{nil, func(string) int64 { return constant }} {
			if got, ok := BestFitPreferred(rooms, size, prefer, rank); got != today || ok != todayOK {
				t.Fatalf("instance %d: rooms %v size %d: BestFitPreferred without preferences = %q, %v; today %q, %v", i, rooms, size, got, ok, today, todayOK)
			}
		}
		prefer := func(d string) int64 { return prefs[d] }
		got, ok := BestFitPreferred(rooms, size, prefer, rank)
		want, wantOK := bruteBestFitPreferred(rooms, size, prefer, rank)
		if got != want || ok != wantOK {
			t.Fatalf("instance %d: rooms %v prefs %v size %d: BestFitPreferred = %q, %v; brute force %q, %v", i, rooms, prefs, size, got, ok, want, wantOK)
		}
	}
}

// brutePreference tries every assignment of the gang's members (the current one and the
// siblings, by shape) to nodes within their member room and returns the best total of the
// best Need members placed.
func brutePreference(g *Gang, nodes []Node, score func(i, s int) int64) int64 {
	var members []int
	for s := range g.Shapes {
		n := g.Siblings[s]
		if s == g.Current {
			n++
		}
		for ; n > 0; n-- {
			members = append(members, s)
		}
	}
	room := make([]int, len(nodes))
	for i := range nodes {
		room[i] = NodeRoom(g, &nodes[i])
	}
	var best int64
	var walk func(m, placed int, total int64)
	walk = func(m, placed int, total int64) {
		if placed == g.Need || m == len(members) {
			best = max(best, total)
			return
		}
		walk(m+1, placed, total) // member m stays unplaced
		s := members[m]
		for i := range nodes {
			if room[i] > 0 && nodes[i].Fits[s] {
				room[i]--
				walk(m+1, placed+1, total+score(i, s))
				room[i]++
			}
		}
	}
	walk(0, 0, 0)
	return best
}

// For one shape the greedy preference is the brute-force best; for several it never exceeds
// it (a feasible assignment) and is positive whenever the best is.
func TestPreferenceAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(3939))
	for i := 0; i < 3000; i++ {
		shapes := 1 + r.Intn(2)
		g := &Gang{Need: 1 + r.Intn(4), Apart: r.Intn(4) == 0, Siblings: make([]int, shapes)}
		for s := 0; s < shapes; s++ {
			g.Shapes = append(g.Shapes, Resources{"gpu": int64(1 + r.Intn(2))})
			g.Siblings[s] = r.Intn(3)
		}
		g.Siblings[g.Current] = max(g.Siblings[g.Current], g.Need-1-sumOthers(g))
		nodes := make([]Node, 1+r.Intn(4))
		scores := make([][]int64, len(nodes))
		for n := range nodes {
			nodes[n] = Node{Name: string(rune('a' + n)), Domain: "d", Free: Resources{"gpu": int64(r.Intn(5))}, FreePods: 8, Fits: make([]bool, shapes)}
			scores[n] = make([]int64, shapes)
			for s := 0; s < shapes; s++ {
				nodes[n].Fits[s] = r.Intn(5) > 0
				scores[n][s] = int64(r.Intn(3) * 50)
			}
		}
		score := func(n, s int) int64 { return scores[n][s] }
		got, want := Preference(g, nodes, score), brutePreference(g, nodes, score)
		if got > want || (shapes == 1 && got != want) || (want > 0 && got == 0) {
			t.Fatalf("instance %d: gang %+v nodes %+v scores %v: Preference = %d, brute force %d", i, g, nodes, scores, got, want)
		}
	}
}

func sumOthers(g *Gang) int {
	n := 0
	for s, k := range g.Siblings {
		if s != g.Current {
			n += k
		}
	}
	return n
}

// OME's migration shape: four members prefer the two hint nodes (weight 50): a domain holding
// both hint nodes with room for two members each scores 4 × 50.
func TestPreferenceMigration(t *testing.T) {
	g := &Gang{Shapes: []Resources{{"gpu": 4}}, Siblings: []int{3}, Need: 4}
	nodes := []Node{
		{Name: "b-0", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
		{Name: "b-1", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
		{Name: "b-2", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
	}
	hint := map[string]bool{"b-1": true, "b-2": true}
	score := func(n, _ int) int64 {
		if hint[nodes[n].Name] {
			return 50
		}
		return 0
	}
	if got := Preference(g, nodes, score); got != 200 {
		t.Fatalf("Preference = %d, want 200 (four members on the two hint nodes)", got)
	}
	g.Apart = true // one member per node: only two land on hint nodes
	if got := Preference(g, nodes, score); got != 100 {
		t.Fatalf("Preference apart = %d, want 100", got)
	}
}

func TestBestGroupFitPreferred(t *testing.T) {
	plans := map[string]*GroupPlan{
		"tight": {Feasible: true, Room: 4, Need: 4},
		"loose": {Feasible: true, Room: 9, Need: 4},
		"mid":   {Feasible: true, Room: 6, Need: 4},
		"none":  {Feasible: false, Need: 4},
	}
	for _, tc := range []struct {
		name  string
		prefs map[string]int64
		want  string
	}{
		{"no preferences: best fit", nil, "tight"},
		{"preferred beats best fit", map[string]int64{"loose": 100}, "loose"},
		{"among the preferred, best fit", map[string]int64{"loose": 100, "mid": 100}, "mid"},
		{"an infeasible domain's preference counts for nothing", map[string]int64{"none": 900}, "tight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prefer func(string) int64
			if tc.prefs != nil {
				prefer = func(d string) int64 { return tc.prefs[d] }
			}
			if got, ok := BestGroupFitPreferred(plans, prefer); !ok || got != tc.want {
				t.Fatalf("BestGroupFitPreferred = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// PreferSlots moves a packed reservation onto the preferred nodes of each class and keeps
// every class's member count: random instances against the counts Assign gives.
func TestPreferSlots(t *testing.T) {
	g := &Gang{Shapes: []Resources{{"gpu": 8}}, Siblings: []int{1}, Need: 2}
	nodes := []Node{
		{Name: "b-0", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
		{Name: "b-1", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
		{Name: "b-2", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
		{Name: "b-3", Free: Resources{"gpu": 8}, FreePods: 10, Fits: []bool{true}},
	}
	counts, _ := Assign(g, nodes, 2)
	if counts["b-0"] != 1 || counts["b-1"] != 1 {
		t.Fatalf("Assign = %v, want b-0 and b-1 (name order)", counts)
	}
	hint := map[string]int64{"b-1": 50, "b-2": 50}
	got := PreferSlots(g, nodes, counts, func(i int) int64 { return hint[nodes[i].Name] })
	if len(got) != 2 || got["b-1"] != 1 || got["b-2"] != 1 {
		t.Fatalf("PreferSlots = %v, want the hint nodes b-1 and b-2", got)
	}

	r := rand.New(rand.NewSource(77))
	for n := 0; n < 2000; n++ {
		g := &Gang{Shapes: []Resources{{"gpu": int64(1 + r.Intn(4))}}, Siblings: []int{r.Intn(6)}, Need: 1 + r.Intn(6)}
		var nodes []Node
		scores := map[string]int64{}
		for i := 0; i < 1+r.Intn(6); i++ {
			name := string(rune('a' + i))
			nodes = append(nodes, Node{Name: name, Free: Resources{"gpu": int64(r.Intn(9))}, FreePods: 8, Fits: []bool{r.Intn(6) > 0}})
			scores[name] = int64(r.Intn(3))
		}
		counts, assigned := Assign(g, nodes, g.Need)
		got := PreferSlots(g, nodes, counts, func(i int) int64 { return scores[nodes[i].Name] })
		total := 0
		for i := range nodes {
			k := got[nodes[i].Name]
			total += k
			if k > NodeRoom(g, &nodes[i]) {
				t.Fatalf("instance %d: %s takes %d, more than its room %d", n, nodes[i].Name, k, NodeRoom(g, &nodes[i]))
			}
		}
		if total != assigned {
			t.Fatalf("instance %d: PreferSlots holds %d members, Assign %d (%v → %v)", n, total, assigned, counts, got)
		}
	}
}
