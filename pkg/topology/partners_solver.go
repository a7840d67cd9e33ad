package topology

import (
	"cmp"
	"maps"
	"slices"
	"sort"
)

// groupSolver is one group domain's nodes (sorted by name) and per-partner figures.
type groupSolver struct {
	partners []Partner
	nodes    []*GroupNode
	need     []int
	perNode  []int
	alone    [][]int       // [p][i] NodeRoom of partner p on untouched node i
	perCopy  [][]Resources // [p][i] per-copy request of p on node i (nil = no shape fits)
	subs     [][]subDomain // [p] sub-domains of p within the group domain, by value
	perms    [][]int
}

// subDomain is one value of a partner's key within the group domain.
type subDomain struct {
	value string
	nodes []int // ascending = by name
	room  int   // Σ NodeRoom
	alone int   // members the partner places there alone (≤ need)
}

func newGroupSolver(partners []Partner, nodes []*GroupNode) *groupSolver {
	ns := slices.Clone(nodes)
	sort.SliceStable(ns, func(a, b int) bool { return ns[a].Name < ns[b].Name })
	s := &groupSolver{partners: partners, nodes: ns}
	P := len(partners)
	s.need = make([]int, P)
	s.perNode = make([]int, P)
	s.alone = make([][]int, P)
	s.perCopy = make([][]Resources, P)
	s.subs = make([][]subDomain, P)
	for p, pt := range partners {
		g := pt.Gang
		s.need[p] = max(g.Need, 1)
		s.perNode[p] = s.need[p]
		if g.Apart {
			s.perNode[p] = 1
		}
		s.alone[p] = make([]int, len(ns))
		s.perCopy[p] = make([]Resources, len(ns))
		bySub := map[string]*subDomain{}
		for i, n := range ns {
			fits := partnerFits(n, p)
			nn := Node{Name: n.Name, Free: n.Free, FreePods: n.FreePods, Fits: fits}
			if p < len(n.Limits) && n.Limits[p] > 0 {
				nn.Limited, nn.Limit = true, n.Limits[p]
			}
			s.alone[p][i] = NodeRoom(g, &nn)
			if pc, ok := PerCopy(g, &nn); ok {
				s.perCopy[p][i] = pc
			}
			v := ""
			if pt.Key >= 0 && pt.Key < len(n.Sub) {
				v = n.Sub[pt.Key]
			}
			if v == "" {
				continue
			}
			sd := bySub[v]
			if sd == nil {
				sd = &subDomain{value: v}
				bySub[v] = sd
			}
			sd.nodes = append(sd.nodes, i)
			sd.room += s.alone[p][i]
		}
		for _, sd := range bySub {
			_, sd.alone = s.place(p, sd.nodes, residual{}, -1)
			s.subs[p] = append(s.subs[p], *sd)
		}
		slices.SortFunc(s.subs[p], func(a, b subDomain) int { return cmp.Compare(a.value, b.value) })
	}
	s.perms = permutations(P)
	return s
}

func partnerFits(n *GroupNode, p int) []bool {
	if p < len(n.Fits) {
		return n.Fits[p]
	}
	return nil
}

// residual is what earlier partners left on the nodes they use (node index → state);
// nodes not in the map are untouched.
type residual map[int]*nodeLeft

type nodeLeft struct {
	free Resources
	pods int64
	// devices is set once a partner with a device limit there took the node: partners share
	// a node's resources in the model, not its devices, so no other device-limited partner
	// may join it.
	devices bool
	// over is set when a partner alone took more than the counts rule allows for a shared
	// node (NodeRoom's one member on a node without a whole spare copy): nobody else may
	// join it then.
	over bool
}

// room is how many members of partner p node i takes given what earlier partners left.
func (s *groupSolver) room(p, i int, st residual) int {
	left, touched := st[i]
	if !touched {
		return s.alone[p][i]
	}
	pc := s.perCopy[p][i]
	limit := s.limit(p, i)
	if pc == nil || left.over || (limit > 0 && left.devices) {
		return 0
	}
	copies := left.pods
	for r, q := range pc {
		if q <= 0 {
			continue
		}
		f := max(left.free[r], 0)
		copies = min(copies, f/q)
	}
	room := int(max(min(copies, int64(s.perNode[p])), 0))
	if limit > 0 {
		room = min(room, limit)
	}
	return room
}

// limit is partner p's device limit on node i (GroupNode.Limits; 0: none).
func (s *groupSolver) limit(p, i int) int {
	if l := s.nodes[i].Limits; p < len(l) {
		return l[p]
	}
	return 0
}

// take records k members of partner p on node i.
func (s *groupSolver) take(p, i, k int, st residual) {
	if k <= 0 {
		return
	}
	left, ok := st[i]
	if !ok {
		n := s.nodes[i]
		// take writes into free: a node without Free still gets a map of its own.
		free := maps.Clone(n.Free)
		if free == nil {
			free = Resources{}
		}
		left = &nodeLeft{free: free, pods: n.FreePods}
		st[i] = left
	}
	for r, q := range s.perCopy[p][i] {
		left.free[r] -= int64(k) * q
		if q > 0 && left.free[r] < 0 {
			left.over = true
		}
	}
	left.pods -= int64(k)
	if left.pods < 0 {
		left.over = true
	}
	if s.limit(p, i) > 0 {
		left.devices = true
	}
}

// solverClass is the nodes of idx that are interchangeable when place matches partner p's
// members: same fit vector and same room given what earlier partners left (key, as
// classKey), and both the pinned node or both not.
type solverClass struct {
	key   string
	room  int
	fits  []bool
	pin   bool
	nodes []int // positions in idx
}

// classes groups the nodes idx (ascending) with room for partner p given st into
// solverClasses, least room first, then by class key (fit vector; the pinned node after its
// equals).
func (s *groupSolver) classes(p int, idx []int, st residual, pin int) []*solverClass {
	S := len(s.partners[p].Gang.Shapes)
	type classID struct {
		key string
		pin bool
	}
	var cls []*solverClass
	byID := map[classID]*solverClass{}
	for j, i := range idx {
		r := s.room(p, i, st)
		if r <= 0 {
			continue
		}
		fits := partnerFits(s.nodes[i], p)
		id := classID{classKey(fits, S, r), i == pin}
		c := byID[id]
		if c == nil {
			c = &solverClass{key: id.key, room: r, fits: fits, pin: id.pin}
			byID[id] = c
			cls = append(cls, c)
		}
		c.nodes = append(c.nodes, j)
	}
	sort.SliceStable(cls, func(a, b int) bool {
		if cls[a].room != cls[b].room {
			return cls[a].room < cls[b].room
		}
		if cls[a].key != cls[b].key {
			return cls[a].key < cls[b].key
		}
		return !cls[a].pin && cls[b].pin
	})
	return cls
}

// place matches partner p's members to the nodes idx (ascending) given st, without changing
// st: counts parallel to idx, and the number placed (≤ need; need means the whole partner
// with its current member, on node pin when pin ≥ 0). The matching is a max flow
// (current → 1 unit, siblings → need-1 units by shape, shape → node class by fit, class →
// sink by room); classes are enabled one at a time, least room first, so the flow fills
// them greedily in that order (flow into the sink never decreases while augmenting).
func (s *groupSolver) place(p int, idx []int, st residual, pin int) ([]int, int) {
	g := s.partners[p].Gang
	need := int64(s.need[p])
	S := len(g.Shapes)
	cls := s.classes(p, idx, st, pin)
	counts := make([]int, len(idx))
	if len(cls) == 0 {
		return counts, 0
	}
	// The current member enters through cur, so it goes only to a class it fits (the
	// pinned node's when pinned); its siblings enter through hub, by shape.
	const cur, hub = 1, 2
	f := newFlowNet(2, S, len(cls))
	f.edge(flowSource, cur, 1)
	f.edge(flowSource, hub, need-1)
	for k := 0; k < S && k < len(g.Siblings); k++ {
		if g.Siblings[k] > 0 {
			f.edge(hub, f.shape(k), int64(g.Siblings[k]))
		}
	}
	okCur := g.Current >= 0 && g.Current < S
	for c, cl := range cls {
		if okCur && g.Current < len(cl.fits) && cl.fits[g.Current] && (pin < 0 || cl.pin) {
			f.edge(cur, f.class(c), 1)
		}
		f.fit(c, cl.fits, need)
	}
	var flow int64
	for c, cl := range cls {
		if flow >= need {
			break
		}
		f.room(c, int64(cl.room)*int64(len(cl.nodes)))
		flow += f.run(need - flow)
	}
	for c, cl := range cls {
		spread(f.used(c), cl.room, len(cl.nodes), func(i, k int) { counts[cl.nodes[i]] = k })
	}
	return counts, int(flow)
}

// outcome is one sequential placement: members placed per partner and counts per partner
// per node index.
type outcome struct {
	placed []int
	counts []map[int]int
	total  int
}

// eval places the partners in order, partner p in sub-domain assign[p] (−1 = nowhere), its
// current member pinned to node pinNode when p == pinP.
func (s *groupSolver) eval(assign, order []int, pinP, pinNode int) outcome {
	P := len(s.partners)
	o := outcome{placed: make([]int, P), counts: make([]map[int]int, P)}
	st := residual{}
	for _, p := range order {
		o.counts[p] = map[int]int{}
		if assign[p] < 0 {
			continue
		}
		idx := s.subs[p][assign[p]].nodes
		pin := -1
		if p == pinP {
			pin = pinNode
		}
		counts, placed := s.place(p, idx, st, pin)
		for j, k := range counts {
			if k > 0 {
				s.take(p, idx[j], k, st)
				o.counts[p][idx[j]] = k
			}
		}
		o.placed[p] = placed
		o.total += placed
	}
	return o
}

func (s *groupSolver) whole(o outcome) bool {
	for p, n := range o.placed {
		if n < s.need[p] {
			return false
		}
	}
	return true
}

// orders returns the partner orders worth trying for an assignment: all of them when two
// partners' sub-domains share a node, else just one.
func (s *groupSolver) orders(assign []int) [][]int {
	seen := map[int]bool{}
	for p, a := range assign {
		if a < 0 {
			continue
		}
		for _, i := range s.subs[p][a].nodes {
			if seen[i] {
				return s.perms
			}
		}
		for _, i := range s.subs[p][a].nodes {
			seen[i] = true
		}
	}
	return s.perms[:1]
}

// fits tries every order for assign (with an optional pin) and returns the first whole
// placement.
func (s *groupSolver) fits(assign []int, pinP, pinNode int) (outcome, bool) {
	for _, ord := range s.orders(assign) {
		if o := s.eval(assign, ord, pinP, pinNode); s.whole(o) {
			return o, true
		}
	}
	return outcome{}, false
}

func (s *groupSolver) witness(o outcome) map[string][]int {
	out := map[string][]int{}
	for p, m := range o.counts {
		for i, k := range m {
			name := s.nodes[i].Name
			if out[name] == nil {
				out[name] = make([]int, len(s.partners))
			}
			out[name][p] += k
		}
	}
	return out
}

// permutations lists the orders of 0..n-1, identity first.
func permutations(n int) [][]int {
	var out [][]int
	cur := make([]int, 0, n)
	used := make([]bool, n)
	var rec func()
	rec = func() {
		if len(cur) == n {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := 0; i < n; i++ {
			if !used[i] {
				used[i] = true
				cur = append(cur, i)
				rec()
				cur = cur[:len(cur)-1]
				used[i] = false
			}
		}
	}
	rec()
	return out
}
