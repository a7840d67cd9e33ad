package topology

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// bruteIterations is how many random instances a brute-force test checks: full, or 2000
// with -short.
func bruteIterations(full int) int {
	if testing.Short() {
		return 2000
	}
	return full
}

// TestPlanBruteForce compares Plan against an exhaustive search over sibling assignments on
// many small random instances.
func TestPlanBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	iters := bruteIterations(20000)
	withCands, excluded := 0, 0
	for i := 0; i < iters; i++ {
		g, nodes := randomInstance(rng)
		if msg := checkPlan(&g, nodes); msg != "" {
			t.Fatalf("instance %d: %s\ngang=%+v\nnodes=%+v", i, msg, g, nodes)
		}
		has, excl := false, false
		for _, p := range Plan(&g, nodes) {
			if len(p.Candidates) == 0 {
				continue
			}
			has = true
			// a node fitting the current shape that is not a candidate: the matching
			// (not just the fit) decided
			for _, n := range nodes {
				if n.Domain == p.Domain && n.Fits[g.Current] && !slices.Contains(p.Candidates, n.Name) {
					excl = true
				}
			}
		}
		if has {
			withCands++
		}
		if excl {
			excluded++
		}
	}
	t.Logf("%d instances: %d with candidates, %d where a fitting node was excluded", iters, withCands, excluded)
	// Make sure the generator exercises every outcome.
	if withCands == 0 || withCands == iters || excluded == 0 {
		t.Fatalf("generator degenerate: %d/%d instances with candidates, %d with exclusions", withCands, iters, excluded)
	}
}

// randomInstance draws a small gang (≤ 3 shapes, ≤ 6 siblings) and ≤ 5 nodes.
func randomInstance(rng *rand.Rand) (Gang, []Node) {
	b := make([]byte, 64)
	rng.Read(b)
	return decodeInstance(b)
}

// byteSource hands out bytes, then zeros.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	v := s.b[s.i]
	s.i++
	return int(v)
}

// decodeShapes reads a gang's shapes (1..max, each 0..3 gpu and 0..2 cpu) and its current
// shape; siblings and need are left to the caller.
func decodeShapes(s *byteSource, max int) Gang {
	nShapes := 1 + s.next()%max
	g := Gang{Shapes: make([]Resources, nShapes), Siblings: make([]int, nShapes)}
	for k := range g.Shapes {
		r := Resources{}
		if v := s.next() % 4; v > 0 {
			r["gpu"] = int64(v)
		}
		if v := s.next() % 3; v > 0 {
			r["cpu"] = int64(v)
		}
		g.Shapes[k] = r
	}
	g.Current = s.next() % nShapes
	return g
}

// decodeInstance turns bytes into a small planning instance: 1..3 shapes, 0..6 siblings in
// total, need 1..4, 1..5 nodes across domains "", "a", "b".
func decodeInstance(data []byte) (Gang, []Node) {
	s := &byteSource{b: data}
	g := decodeShapes(s, 3)
	nShapes := len(g.Shapes)
	budget := 6
	for k := range g.Siblings {
		v := s.next() % 4
		if v > budget {
			v = budget
		}
		g.Siblings[k] = v
		budget -= v
	}
	g.Need = 1 + s.next()%4
	g.Apart = s.next()%4 == 0
	nNodes := 1 + s.next()%5
	domains := []string{"", "a", "b", "a", "b"}
	nodes := make([]Node, nNodes)
	for j := range nodes {
		n := Node{
			Name:     fmt.Sprintf("n%d", j),
			Domain:   domains[s.next()%len(domains)],
			Free:     Resources{"gpu": int64(s.next()%8) - 1, "cpu": int64(s.next() % 6)},
			FreePods: int64(s.next()%5) - 1,
			Fits:     make([]bool, nShapes),
		}
		bits := s.next()
		for k := range n.Fits {
			n.Fits[k] = bits&(1<<k) != 0 || bits&(1<<(k+3)) != 0
		}
		nodes[j] = n
	}
	return g, nodes
}

// bruteDomain is the exhaustive reference for one domain: candidates and room per §4.3.
func bruteDomain(g *Gang, nodes []*Node) (cands []string, room int) {
	caps := make([]int, len(nodes))
	total := 0
	for j, n := range nodes {
		caps[j] = NodeRoom(g, n)
		total += caps[j]
	}
	var sibs []int // shape of each sibling
	for k, c := range g.Siblings {
		if k >= len(g.Shapes) {
			break
		}
		for i := 0; i < c; i++ {
			sibs = append(sibs, k)
		}
	}
	want := g.Need - 1
	for j0, n0 := range nodes {
		if g.Current < 0 || g.Current >= len(g.Shapes) {
			break
		}
		if g.Current >= len(n0.Fits) || !n0.Fits[g.Current] || caps[j0] <= 0 {
			continue
		}
		c := append([]int(nil), caps...)
		c[j0]--
		if assign(sibs, 0, 0, want, nodes, c) {
			cands = append(cands, n0.Name)
		}
	}
	sort.Strings(cands)
	if len(cands) > 0 {
		room = total
	}
	return cands, room
}

// assign tries every assignment of siblings[i:] (each to a fitting node with capacity left,
// or to nowhere) and reports whether at least want siblings in total can be placed.
func assign(sibs []int, i, placed, want int, nodes []*Node, caps []int) bool {
	if placed >= want {
		return true
	}
	if placed+len(sibs)-i < want {
		return false
	}
	k := sibs[i]
	for j, n := range nodes {
		if caps[j] > 0 && k < len(n.Fits) && n.Fits[k] {
			caps[j]--
			ok := assign(sibs, i+1, placed+1, want, nodes, caps)
			caps[j]++
			if ok {
				return true
			}
		}
	}
	return assign(sibs, i+1, placed, want, nodes, caps)
}

// checkPlan verifies Plan's invariants and its agreement with the brute force; "" = OK.
func checkPlan(g *Gang, nodes []Node) string {
	plans := Plan(g, nodes)
	byDomain := map[string][]*Node{}
	names := map[string]*Node{}
	for i := range nodes {
		n := &nodes[i]
		names[n.Name] = n
		if n.Domain != "" {
			byDomain[n.Domain] = append(byDomain[n.Domain], n)
		}
	}
	if len(plans) != len(byDomain) {
		return fmt.Sprintf("plan has domains %v, want %d domains", slices.Sorted(maps.Keys(plans)), len(byDomain))
	}
	for d, ns := range byDomain {
		p := plans[d]
		if p == nil {
			return fmt.Sprintf("domain %q missing", d)
		}
		if p.Domain != d {
			return fmt.Sprintf("plan[%q].Domain = %q", d, p.Domain)
		}
		var wantNodes []string
		for _, n := range ns {
			wantNodes = append(wantNodes, n.Name)
		}
		sort.Strings(wantNodes)
		if !slices.Equal(p.Nodes, wantNodes) {
			return fmt.Sprintf("plan[%q].Nodes = %v, want %v", d, p.Nodes, wantNodes)
		}
		if (p.Room == 0) != (len(p.Candidates) == 0) {
			return fmt.Sprintf("plan[%q]: room %d with %d candidates", d, p.Room, len(p.Candidates))
		}
		if !sort.StringsAreSorted(p.Candidates) {
			return fmt.Sprintf("plan[%q].Candidates not sorted: %v", d, p.Candidates)
		}
		for _, c := range p.Candidates {
			n := names[c]
			if n == nil || n.Domain != d {
				return fmt.Sprintf("plan[%q]: candidate %q is not a node of the domain", d, c)
			}
			if g.Current >= len(n.Fits) || !n.Fits[g.Current] {
				return fmt.Sprintf("plan[%q]: candidate %q does not fit the current shape", d, c)
			}
			if NodeRoom(g, n) <= 0 {
				return fmt.Sprintf("plan[%q]: candidate %q has no room", d, c)
			}
		}
		bc, br := bruteDomain(g, ns)
		if !slices.Equal(p.Candidates, bc) {
			return fmt.Sprintf("plan[%q].Candidates = %v, brute force %v", d, p.Candidates, bc)
		}
		if p.Room != br {
			return fmt.Sprintf("plan[%q].Room = %d, brute force %d", d, p.Room, br)
		}
	}
	rooms := Rooms(plans)
	if msg := checkBestFit(rooms, g.Need); msg != "" {
		return msg
	}
	return ""
}

// checkBestFit verifies BestFit against its definition; "" = OK.
func checkBestFit(rooms map[string]int, size int) string {
	d, ok := BestFit(rooms, size)
	// reference: sort fitting domains by (room, name)
	var fit []string
	for k, r := range rooms {
		if size > 0 && r >= size {
			fit = append(fit, k)
		}
	}
	sort.Slice(fit, func(i, j int) bool {
		if rooms[fit[i]] != rooms[fit[j]] {
			return rooms[fit[i]] < rooms[fit[j]]
		}
		return fit[i] < fit[j]
	})
	if len(fit) == 0 {
		if ok || d != "" {
			return fmt.Sprintf("BestFit(%v,%d) = %q,true; want none", rooms, size, d)
		}
		return ""
	}
	if !ok || d != fit[0] {
		return fmt.Sprintf("BestFit(%v,%d) = %q,%v; want %q", rooms, size, d, ok, fit[0])
	}
	if rooms[d] < size {
		return fmt.Sprintf("BestFit(%v,%d) = %q with room %d < size", rooms, size, d, rooms[d])
	}
	if c := CountFitting(rooms, size); c != len(fit) {
		return fmt.Sprintf("CountFitting(%v,%d) = %d, want %d", rooms, size, c, len(fit))
	}
	return ""
}
