package topology

import (
	"sort"
	"strconv"
	"strings"
)

// DomainPlan is the planning outcome for one domain.
type DomainPlan struct {
	Domain string
	// Room is the sum of the member room of the domain's nodes when the whole gang can form
	// there, else 0.
	Room int
	// Candidates are the nodes where the current member may go while the rest of the gang
	// still fits in the domain, sorted by name.
	Candidates []string
	// Nodes are all the domain's nodes in the planning set, sorted by name.
	Nodes []string
}

// Plan computes a DomainPlan for every domain that has at least one node in nodes. Nodes
// with an empty Domain belong to no domain and are ignored.
func Plan(g *Gang, nodes []Node) map[string]*DomainPlan {
	byDomain := byValue(nodes, func(n *Node) string { return n.Domain })
	out := make(map[string]*DomainPlan, len(byDomain))
	for d, ns := range byDomain {
		out[d] = planDomain(g, d, ns)
	}
	return out
}

// byValue indexes the elements of xs by key, in order; elements whose key is "" are left out.
func byValue[T any](xs []T, key func(*T) string) map[string][]*T {
	out := map[string][]*T{}
	for i := range xs {
		x := &xs[i]
		if k := key(x); k != "" {
			out[k] = append(out[k], x)
		}
	}
	return out
}

// nodeClass groups the nodes of a domain that are interchangeable for matching: same fit
// vector and same member room.
type nodeClass struct {
	fits  []bool
	room  int
	nodes []string
}

func planDomain(g *Gang, domain string, nodes []*Node) *DomainPlan {
	p := &DomainPlan{Domain: domain, Nodes: make([]string, 0, len(nodes))}
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, n.Name)
	}
	sort.Strings(p.Nodes)
	// Nodes without room join no class: they add nothing to the room and host no member.
	cls := classesOf(g, nodes)
	total := 0
	for i, c := range cls {
		total += c.room * len(c.nodes)
		if canFormFrom(g, cls, i) {
			p.Candidates = append(p.Candidates, c.nodes...)
		}
	}
	if len(p.Candidates) > 0 {
		sort.Strings(p.Candidates)
		p.Room = total
	}
	return p
}

func classKey(fits []bool, shapes, room int) string {
	var b strings.Builder
	for s := 0; s < shapes; s++ {
		if s < len(fits) && fits[s] {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(room))
	return b.String()
}

// canFormFrom reports whether the gang can form in the domain when the current member takes
// one slot on a node of class c0: the siblings must then be matched to the remaining slots
// (capacitated bipartite matching, shape → node class) for at least Need-1 of them.
func canFormFrom(g *Gang, cls []*nodeClass, c0 int) bool {
	if g.Current < 0 || g.Current >= len(g.Shapes) {
		return false
	}
	if !cls[c0].fits[g.Current] || cls[c0].room <= 0 {
		return false
	}
	want := int64(g.Need - 1)
	if want <= 0 {
		return true
	}
	f := newFlowNet(0, len(g.Shapes), len(cls))
	var supply int64
	for s := range g.Shapes {
		if s < len(g.Siblings) && g.Siblings[s] > 0 {
			f.edge(flowSource, f.shape(s), int64(g.Siblings[s]))
			supply += int64(g.Siblings[s])
		}
	}
	if supply < want {
		return false
	}
	var slots int64
	for c, cl := range cls {
		k := int64(cl.room) * int64(len(cl.nodes))
		if c == c0 {
			k--
		}
		if k <= 0 {
			continue
		}
		f.room(c, k)
		slots += k
		f.fit(c, cl.fits, want)
	}
	if slots < want {
		return false
	}
	return f.run(want) >= want
}

// Rooms returns the domain → room map of plans.
func Rooms(plans map[string]*DomainPlan) map[string]int {
	out := make(map[string]int, len(plans))
	for d, p := range plans {
		out[d] = p.Room
	}
	return out
}

// BestFit returns the domain with the smallest room that is at least size; ties go to the
// byte-wise smallest domain value. No domain (ok = false) when size <= 0 or none fits.
func BestFit(rooms map[string]int, size int) (string, bool) {
	if size <= 0 {
		return "", false
	}
	best, bestRoom, found := "", 0, false
	for d, r := range rooms {
		if r < size {
			continue
		}
		if !found || r < bestRoom || (r == bestRoom && d < best) {
			best, bestRoom, found = d, r, true
		}
	}
	return best, found
}

// BestFitRanked is BestFit with a tie-breaker: among the domains whose room equals the best
// fit's room, the one with the lowest rank wins, then the byte-wise smallest value. Packing
// always comes first: rank never prefers a domain with more room.
func BestFitRanked(rooms map[string]int, size int, rank func(domain string) int) (string, bool) {
	best, ok := BestFit(rooms, size)
	if !ok || rank == nil {
		return best, ok
	}
	bestRoom, bestRank := rooms[best], rank(best)
	for d, r := range rooms {
		if r != bestRoom || d == best {
			continue
		}
		if k := rank(d); k < bestRank || (k == bestRank && d < best) {
			best, bestRank = d, k
		}
	}
	return best, true
}

// Largest returns the domain with the largest room (ties by name) and that room; ok is false
// for an empty map. Used to explain why no domain fits.
func Largest(rooms map[string]int) (string, int, bool) {
	best, bestRoom, found := "", 0, false
	for d, r := range rooms {
		if !found || r > bestRoom || (r == bestRoom && d < best) {
			best, bestRoom, found = d, r, true
		}
	}
	return best, bestRoom, found
}

// CountFitting returns how many domains have room >= size.
func CountFitting(rooms map[string]int, size int) int {
	n := 0
	for _, r := range rooms {
		if r >= size {
			n++
		}
	}
	return n
}
