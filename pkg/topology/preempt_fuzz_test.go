package topology

import (
	"cmp"
	"fmt"
	"sort"
	"testing"
)

// FuzzMinimalVictims decodes bytes into a tiny preemption instance (≤ 2 shapes, ≤ 4 nodes in
// domains "a", "b" and none, ≤ 5 victim units of priorities -1..3 against a preemptor of
// priority 2) and checks MinimalVictims per domain against the exhaustive search over the
// subsets of eligible units: the victims are eligible and their eviction leaves room (the
// returned room, recomputed independently through Plan); dropping any one of them leaves
// none (1-minimal); ok is false exactly when evicting every eligible unit leaves no room.
// PreemptionCandidates must list exactly the ok domains, with the same victims, best first.
func FuzzMinimalVictims(f *testing.F) {
	seeds := [][]byte{
		{},
		{0},
		// one shape gpu 3, need 2, two nodes in "a", two units
		{0, 3, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 2, 1, 1, 0, 1, 3, 3, 0, 1, 1, 0, 2, 3, 0, 1},
		// apart, four nodes across a and b, five units
		{0, 2, 1, 0, 2, 3, 0, 3, 0, 2, 1, 2, 3, 1, 1, 4, 3, 2, 3, 1, 1, 3, 1, 2, 0, 3, 1, 3, 5, 0, 1, 2, 0, 31,
			4, 2, 1, 3, 1, 0, 2, 1, 1, 1, 15, 3, 2, 1, 0, 1, 0, 2, 1, 2, 3, 1, 1, 7, 2, 0, 1, 4, 0, 0, 3, 2, 1, 1, 2},
		// two shapes
		{1, 1, 0, 3, 2, 1, 2, 1, 3, 0, 3, 0, 1, 3, 3, 1, 3, 0, 0, 3, 2, 0, 1, 1, 3, 3, 4, 1, 1, 0, 1, 1, 3, 3, 1, 2, 2, 1, 0, 0, 3, 2, 0, 15, 3, 1, 0, 1, 2, 0, 1},
		{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, prio, nodes, units := decodePreemptInstance(data)
		if msg := checkPreemption(&g, prio, nodes, units, nil); msg != "" {
			t.Fatalf("%s\ngang=%+v\nnodes=%+v\nunits=%+v", msg, g, nodes, units)
		}
	})
}

// FuzzPreemptionCandidateOrder checks that ComparePreemptionCandidates is a total order
// (antisymmetric, transitive, 0 only on equal figures) matching its definition, and that
// ChoosePreemptionCandidate returns the first minimum, the same candidate in any input order.
func FuzzPreemptionCandidateOrder(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 1, 2, 1, 1, 1, 1, 1, 1, 0, 1, 2, 1, 2, 1, 1})
	f.Add([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{4, 2, 1, 0, 2, 1, 2, 1, 3, 1, 0, 1, 1, 2, 1, 2, 0, 2, 2, 1, 0, 0, 1, 1, 2, 1, 3, 2, 0, 0, 2, 1, 1, 2, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{b: data}
		cands := make([]PreemptionCandidate, s.next()%7)
		for i := range cands {
			c := PreemptionCandidate{
				Domain:        []string{"a", "b", "c", "a-1"}[s.next()%4],
				Victims:       make([]int, s.next()%3),
				PDBViolations: s.next() % 2,
				MaxPriority:   int32(s.next()%3) - 1,
				Pods:          s.next() % 3,
				PrioritySum:   int64(s.next()%3) - 1,
				Room:          s.next() % 4,
				Need:          1 + s.next()%3,
			}
			cands[i] = c
		}
		for i := range cands {
			for j := range cands {
				a, b := &cands[i], &cands[j]
				c := ComparePreemptionCandidates(a, b)
				if c != refCompare(a, b) {
					t.Fatalf("Compare(%+v, %+v) = %d, definition %d", *a, *b, c, refCompare(a, b))
				}
				if c != -ComparePreemptionCandidates(b, a) {
					t.Fatalf("Compare not antisymmetric on %+v, %+v", *a, *b)
				}
				for k := range cands {
					d, e := ComparePreemptionCandidates(b, &cands[k]), ComparePreemptionCandidates(a, &cands[k])
					if c <= 0 && d <= 0 && e > 0 || (c < 0 || d < 0) && c <= 0 && d <= 0 && e >= 0 {
						t.Fatalf("Compare not transitive: %+v, %+v, %+v", *a, *b, cands[k])
					}
				}
			}
		}
		best, ok := ChoosePreemptionCandidate(cands)
		if ok != (len(cands) > 0) {
			t.Fatalf("ChoosePreemptionCandidate ok=%v for %d candidates", ok, len(cands))
		}
		if !ok {
			return
		}
		for j := range cands {
			c := ComparePreemptionCandidates(&cands[best], &cands[j])
			if c > 0 || (j < best && c == 0) {
				t.Fatalf("ChoosePreemptionCandidate = %d but %d is better or equal and earlier: %+v", best, j, cands)
			}
		}
		// any order of the input picks an equal candidate (same figures and domain)
		n := len(cands)
		for rot := 0; rot < n; rot++ {
			for _, rev := range []bool{false, true} {
				perm := make([]PreemptionCandidate, n)
				for i := range perm {
					k := (i + rot) % n
					if rev {
						k = n - 1 - k
					}
					perm[i] = cands[k]
				}
				if p, _ := ChoosePreemptionCandidate(perm); ComparePreemptionCandidates(&perm[p], &cands[best]) != 0 {
					t.Fatalf("order-dependent choice: %+v then %+v", cands[best], perm[p])
				}
			}
		}
	})
}

// refCompare is the definition of the candidate order as a key tuple.
func refCompare(a, b *PreemptionCandidate) int {
	ka := []int64{int64(a.PDBViolations), int64(a.MaxPriority), int64(len(a.Victims)), int64(a.Pods), a.PrioritySum, int64(a.Room - a.Need)}
	kb := []int64{int64(b.PDBViolations), int64(b.MaxPriority), int64(len(b.Victims)), int64(b.Pods), b.PrioritySum, int64(b.Room - b.Need)}
	for i := range ka {
		if c := cmp.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// decodePreemptInstance turns bytes into a small preemption instance: 1..2 shapes, need
// 1..4, 1..4 nodes in domains "a", "b" or none, 0..5 units with priorities -1..3 (the
// preemptor has 2), each freeing something on a subset of the nodes and maybe on a node
// outside the instance.
func decodePreemptInstance(data []byte) (Gang, int32, []Node, []VictimUnit) {
	s := &byteSource{b: data}
	g := decodeShapes(s, 2)
	nShapes := len(g.Shapes)
	for k := range g.Siblings {
		g.Siblings[k] = s.next() % 3
	}
	g.Need = 1 + s.next()%4
	g.Apart = s.next()%3 == 0
	nNodes := 1 + s.next()%4
	domains := []string{"a", "a", "b", ""}
	nodes := make([]Node, nNodes)
	for j := range nodes {
		n := Node{
			Name:     fmt.Sprintf("n%d", j),
			Domain:   domains[s.next()%len(domains)],
			Free:     Resources{"gpu": int64(s.next()%6) - 1, "cpu": int64(s.next() % 4)},
			FreePods: int64(s.next()%4) - 1,
			Fits:     make([]bool, nShapes),
		}
		bits := s.next()
		for k := range n.Fits {
			n.Fits[k] = bits&(1<<k) == 0 || bits&(1<<(k+2)) != 0
		}
		nodes[j] = n
	}
	units := make([]VictimUnit, s.next()%6)
	for i := range units {
		u := VictimUnit{
			Name:     fmt.Sprintf("u%d", s.next()%4), // duplicate names happen: the index breaks the tie
			Priority: int32(s.next()%5) - 1,
			Pods:     1 + s.next()%3,
			Frees:    map[string]NodeFree{},
		}
		if s.next()%4 == 3 {
			u.PDBViolations = 1
		}
		mask := s.next()
		if mask&0x1f == 0 {
			mask = 1 << (i % 5)
		}
		for j := 0; j < 5; j++ {
			if mask&(1<<j) == 0 {
				continue
			}
			name := "elsewhere"
			if j < len(nodes) {
				name = nodes[j].Name
			}
			u.Frees[name] = NodeFree{Resources: Resources{"gpu": int64(s.next() % 5), "cpu": int64(s.next() % 3)}, Pods: int64(s.next() % 2)}
		}
		units[i] = u
	}
	return g, 2, nodes, units
}

// bruteRoom is the reference room of the nodes (as one domain) with the units of set evicted:
// fresh copies with the frees added, the resource part of the fit recomputed, through Plan.
func bruteRoom(g *Gang, nodes []Node, units []VictimUnit, set []bool) int {
	adj := make([]Node, len(nodes))
	for i, n := range nodes {
		free := Resources{}
		for r, q := range n.Free {
			free[r] = q
		}
		pods := n.FreePods
		for u, in := range set {
			if f, ok := units[u].Frees[n.Name]; in && ok {
				for r, q := range f.Resources {
					free[r] += q
				}
				pods += f.Pods
			}
		}
		fits := make([]bool, len(g.Shapes))
		for s, req := range g.Shapes {
			fits[s] = s < len(n.Fits) && n.Fits[s] && pods >= 1
			for r, q := range req {
				if q > 0 && q > free[r] {
					fits[s] = false
				}
			}
		}
		adj[i] = Node{Name: n.Name, Domain: "x", Free: free, FreePods: pods, Fits: fits}
	}
	return Plan(g, adj)["x"].Room
}

// preemptStats counts what the brute-force checks saw (the generator must reach each case).
type preemptStats struct {
	domains, ok, notOK, empty, multi, reprieved int
	// nonMonotone: domains where some feasible victim set stops being feasible when one
	// more eligible unit is added; notMinimum: answers larger than the smallest feasible set.
	nonMonotone, notMinimum int
}

// checkMinimalVictims checks MinimalVictims on nodes taken as one domain; "" = OK.
func checkMinimalVictims(g *Gang, prio int32, nodes []Node, units []VictimUnit) string {
	return checkDomainVictims(g, prio, nodes, units, nil)
}

func checkDomainVictims(g *Gang, prio int32, nodes []Node, units []VictimUnit, st *preemptStats) string {
	if st == nil {
		st = &preemptStats{}
	}
	st.domains++
	victims, room, ok := MinimalVictims(g, prio, nodes, units)
	var elig []int
	for i := range units {
		if units[i].Priority < prio {
			elig = append(elig, i)
		}
	}
	feasible := func(set []bool) (int, bool) {
		r := bruteRoom(g, nodes, units, set)
		return r, r > 0 && r >= g.Need
	}
	set := make([]bool, len(units))
	for _, i := range elig {
		set[i] = true
	}
	if _, all := feasible(set); ok != all {
		return fmt.Sprintf("MinimalVictims ok=%v but evicting every eligible unit %v feasible=%v", ok, elig, all)
	}
	if !ok {
		st.notOK++
		if len(victims) != 0 || room != 0 {
			return fmt.Sprintf("MinimalVictims = %v, room %d without ok", victims, room)
		}
		return ""
	}
	st.ok++
	if !sort.IntsAreSorted(victims) {
		return fmt.Sprintf("victims %v not sorted", victims)
	}
	clear(set)
	for k, v := range victims {
		if v < 0 || v >= len(units) || (k > 0 && victims[k-1] == v) {
			return fmt.Sprintf("victims %v: bad or repeated index %d", victims, v)
		}
		if units[v].Priority >= prio {
			return fmt.Sprintf("victim %d has priority %d >= preemptor %d", v, units[v].Priority, prio)
		}
		set[v] = true
	}
	r, f := feasible(set)
	if !f || r != room {
		return fmt.Sprintf("victims %v: brute room %d feasible=%v, MinimalVictims room %d", victims, r, f, room)
	}
	for _, v := range victims {
		set[v] = false
		if _, f := feasible(set); f {
			return fmt.Sprintf("victims %v not 1-minimal: %d can be dropped", victims, v)
		}
		set[v] = true
	}
	switch {
	case len(victims) == 0:
		st.empty++
	case len(victims) > 1:
		st.multi++
	}
	if len(victims) < len(elig) {
		st.reprieved++
	}
	// statistics over every subset of the eligible units
	smallest, nonMono := len(elig)+1, false
	for mask := 0; mask < 1<<len(elig); mask++ {
		clear(set)
		size := 0
		for b, i := range elig {
			if mask&(1<<b) != 0 {
				set[i] = true
				size++
			}
		}
		if _, f := feasible(set); !f {
			continue
		}
		smallest = min(smallest, size)
		for b, i := range elig {
			if mask&(1<<b) == 0 && !nonMono {
				set[i] = true
				if _, f := feasible(set); !f {
					nonMono = true
				}
				set[i] = false
			}
		}
	}
	if nonMono {
		st.nonMonotone++
	}
	if len(victims) > smallest {
		st.notMinimum++
	}
	return ""
}

// checkPreemption checks every domain of the instance and PreemptionCandidates; "" = OK.
func checkPreemption(g *Gang, prio int32, nodes []Node, units []VictimUnit, st *preemptStats) string {
	before := fmt.Sprintf("%+v %+v %+v", *g, nodes, units)
	byDomain := map[string][]Node{}
	for _, n := range nodes {
		if n.Domain != "" {
			byDomain[n.Domain] = append(byDomain[n.Domain], n)
		}
	}
	want := map[string]PreemptionCandidate{}
	for d, ns := range byDomain {
		if msg := checkDomainVictims(g, prio, ns, units, st); msg != "" {
			return fmt.Sprintf("domain %q: %s", d, msg)
		}
		if v, r, ok := MinimalVictims(g, prio, ns, units); ok {
			want[d] = NewPreemptionCandidate(d, g, units, v, r)
		}
	}
	got := PreemptionCandidates(g, prio, nodes, units)
	if len(got) != len(want) {
		return fmt.Sprintf("PreemptionCandidates = %+v, want domains %v", got, want)
	}
	for i := range got {
		w, ok := want[got[i].Domain]
		if !ok || !sameCandidate(&got[i], &w) {
			return fmt.Sprintf("PreemptionCandidates[%d] = %+v, want %+v", i, got[i], w)
		}
		if i > 0 && ComparePreemptionCandidates(&got[i-1], &got[i]) >= 0 {
			return fmt.Sprintf("PreemptionCandidates not best first: %+v", got)
		}
	}
	if after := fmt.Sprintf("%+v %+v %+v", *g, nodes, units); after != before {
		return fmt.Sprintf("inputs changed:\n%s\n%s", before, after)
	}
	return ""
}
