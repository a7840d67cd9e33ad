package topology

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Partner placement groups. A group is several partner gangs that are placed together, all
// or nothing. Each partner is a Gang (its own shapes, Need and Apart) with its own topology
// key; the group has a group key, coarser than or equal to every partner key. A placement
// chooses ONE group domain (a value of the group key) and, for every partner, ONE sub-domain
// (a value of that partner's key) among the group domain's nodes; the partner's members all
// go to nodes of its sub-domain. When all keys are equal the sub-domains are the group
// domain itself and all partners' members share one domain.
//
// Model of a node shared by partners. For one partner alone a node holds NodeRoom members,
// exactly as for a single gang (Plan). When several partners use the same node they never
// count the same free slot: a partner placing k members there takes k copies of its per-copy
// request (per resource, the largest request among its shapes that fit the node, as in
// NodeRoom) and k pod slots, and the next partner sees only what is left. Counts (k_p) on a
// node are admissible when
//
//   - one partner alone uses the node and k_p ≤ NodeRoom(p, node), or
//   - Σ k_p · perCopy_p ≤ Free (per resource), Σ k_p ≤ FreePods, and each k_p ≤ 1 for an
//     Apart partner (≤ its Need otherwise), every partner using the node having a fitting
//     shape there.
//
// Apart is a constraint among the members of one partner only: members of different
// partners may share a node (one member of each Apart partner per node at most). A caller
// that wants partners apart from each other expresses it in Fits.
//
// Within its sub-domain, each partner's members are matched to nodes exactly as Plan does
// (its current member on a node fitting Gang.Current, Need-1 siblings of fitting shapes; a
// Need below 1 counts as 1). Members already placed are not modelled: the caller passes only
// the nodes (and domains) the group may still use.
//
// Feasibility. For a candidate group domain the planner tries assignments of partners to
// sub-domains (each partner only among the sub-domains where it fits alone) and, when the
// chosen sub-domains share nodes, every order of the partners (n! orders; n ≤ 4 is typical):
// partners are placed one after the other on a copy of the nodes, each taking what the
// earlier ones left. A partner's placement within its sub-domain is exact for that partner
// (a max-flow matching of members to nodes, so it fails only when the partner really does
// not fit in what is left) and, among its placements, greedy: it fills the nodes with the
// least room for it first (then by fit vector, then name), so that roomier nodes stay free
// for later partners. The answer is exact when the partners' sub-domains share no node, and
// exact relative to this placement model otherwise: Feasible = true always comes with a
// placement that satisfies the admissibility rules above (sound); a joint placement that
// needs a partner to spread in a way its greedy does not choose, in every order, is missed
// (TestPlanGroupBruteForce, against a brute force over member → node assignments on tiny
// random groups, measures it: about 1% of the feasible group domains and 0.5% of the
// candidate nodes are missed; a Feasible plan or candidate is never wrong).

// Partner is one gang of a placement group.
type Partner struct {
	Gang *Gang
	// Key is the index in GroupNode.Sub of the partner's topology key (partners may share a
	// key, and a key may be the group key itself).
	Key int
}

// GroupNode is a node as the group planner sees it.
type GroupNode struct {
	Name string
	// Group is the node's value of the group key; "" = in no group domain (ignored).
	Group string
	// Sub holds the node's value of each key that partners use (Partner.Key indexes it); ""
	// or a missing entry = in no domain of that key (no partner with that key uses the node).
	Sub []string
	// Free is allocatable minus requested, per resource. Missing names count as 0.
	Free Resources
	// FreePods is the number of additional pods the node admits.
	FreePods int64
	// Fits is, per partner (index in the partner list) and per shape of that partner, whether
	// a member of that shape passes the node's hard constraints and resource fit.
	Fits [][]bool
}

// GroupPlan is the outcome for one group domain.
type GroupPlan struct {
	Domain string
	// Feasible is true when every partner fits whole in the group domain at once.
	Feasible bool
	// Sub is, per partner, the chosen sub-domain (its key's value) when Feasible, else nil.
	// Among the feasible assignments the chosen one has the least Room (below), then the
	// smallest Sub vector (partner by partner, byte-wise).
	Sub []string
	// Nodes is, per partner, the nodes of its chosen sub-domain where its current member may
	// go while the whole group still fits (with the chosen Sub), sorted by name; nil when
	// not Feasible.
	Nodes [][]string
	// Room is, when Feasible, the sum over partners of the partner's member room in its
	// chosen sub-domain (Σ NodeRoom over the sub-domain's nodes: DomainPlan.Room there, each
	// partner counting shared nodes for itself); else 0. Room ≥ Need when Feasible, and
	// Room - Need is what BestGroupFit minimises.
	Room int
	// Need is the group's member count: Σ partners' Need (each at least 1).
	Need int
	// Holds is how many of the Need members the group domain can take: Need when Feasible,
	// otherwise the most members the planner placed (partners may be partial, each still in
	// one sub-domain), a lower bound of the true maximum.
	Holds int

	// placed is the witness: node name → members per partner (tests check it).
	placed map[string][]int
}

// PlanGroup computes a GroupPlan for every group domain that has at least one node in nodes
// (nodes with an empty Group are ignored). Node names are assumed unique. No partners → nil.
func PlanGroup(partners []Partner, nodes []GroupNode) map[string]*GroupPlan {
	if len(partners) == 0 {
		return nil
	}
	byGroup := map[string][]*GroupNode{}
	for i := range nodes {
		n := &nodes[i]
		if n.Group == "" {
			continue
		}
		byGroup[n.Group] = append(byGroup[n.Group], n)
	}
	out := make(map[string]*GroupPlan, len(byGroup))
	for d, ns := range byGroup {
		out[d] = newGroupSolver(partners, ns).plan(d)
	}
	return out
}

// BestGroupFit returns the feasible group domain with the least room left (smallest Room,
// the Need being the same for every domain of one PlanGroup answer), ties to the byte-wise
// smallest domain; ok is false when no domain is feasible.
func BestGroupFit(plans map[string]*GroupPlan) (string, bool) {
	best, found := "", false
	var bestLeft int
	for d, p := range plans {
		if p == nil || !p.Feasible {
			continue
		}
		left := p.Room - p.Need
		if !found || left < bestLeft || (left == bestLeft && d < best) {
			best, bestLeft, found = d, left, true
		}
	}
	return best, found
}

// LargestGroup returns the group domain that holds the most of the group's members (Holds,
// ties to the byte-wise smallest domain) with that count and the group's Need, for a message
// such as "the best domain d has room for holds of need members"; ok is false for no plans.
func LargestGroup(plans map[string]*GroupPlan) (domain string, holds, need int, ok bool) {
	for d, p := range plans {
		if p == nil {
			continue
		}
		if !ok || p.Holds > holds || (p.Holds == holds && d < domain) {
			domain, holds, need, ok = d, p.Holds, p.Need, true
		}
	}
	return domain, holds, need, ok
}

// maxHoldsAssignments bounds the sub-domain assignments tried for Holds in an infeasible
// group domain, and maxHoldsEvals the sequential placements run for it.
const (
	maxHoldsAssignments = 1 << 14
	maxHoldsEvals       = 1 << 12
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
			s.alone[p][i] = NodeRoom(g, &nn)
			s.perCopy[p][i] = perCopyOf(g, fits)
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

// perCopyOf is NodeRoom's per-copy request: per resource, the largest request among the
// shapes that fit; nil when none fits.
func perCopyOf(g *Gang, fits []bool) Resources {
	var out Resources
	for k, req := range g.Shapes {
		if k >= len(fits) || !fits[k] {
			continue
		}
		if out == nil {
			out = Resources{}
		}
		for r, q := range req {
			if q > out[r] {
				out[r] = q
			}
		}
	}
	return out
}

// residual is what earlier partners left on the nodes they use (node index → state);
// nodes not in the map are untouched.
type residual map[int]*nodeLeft

type nodeLeft struct {
	free Resources
	pods int64
	// over is set when a partner alone took more than the counts rule allows for a shared
	// node (NodeRoom's one member on a node without a whole spare copy): nobody else may
	// join it then.
	over bool
}

func maps0(m Resources) Resources {
	out := make(Resources, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// room is how many members of partner p node i takes given what earlier partners left.
func (s *groupSolver) room(p, i int, st residual) int {
	left, touched := st[i]
	if !touched {
		return s.alone[p][i]
	}
	pc := s.perCopy[p][i]
	if pc == nil || left.over {
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
	return int(max(min(copies, int64(s.perNode[p])), 0))
}

// take records k members of partner p on node i.
func (s *groupSolver) take(p, i, k int, st residual) {
	if k <= 0 {
		return
	}
	left, ok := st[i]
	if !ok {
		n := s.nodes[i]
		left = &nodeLeft{free: maps0(n.Free), pods: n.FreePods}
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
}

// place matches partner p's members to the nodes idx (ascending) given st, without changing
// st: counts parallel to idx, and the number placed (≤ need; need means the whole partner
// with its current member, on node pin when pin ≥ 0). The matching is a max flow
// (current → 1 unit, siblings → need-1 units by shape, shape → node class by fit, class →
// sink by room); classes are enabled one at a time, least room first, so the flow fills
// them greedily in that order (flow into the sink never decreases while augmenting).
func (s *groupSolver) place(p int, idx []int, st residual, pin int) ([]int, int) {
	g := s.partners[p].Gang
	need := s.need[p]
	S := len(g.Shapes)
	type class struct {
		key   string
		room  int
		fits  []bool
		pin   bool
		nodes []int // positions in idx
	}
	var cls []*class
	byKey := map[string]*class{}
	for j, i := range idx {
		r := s.room(p, i, st)
		if r <= 0 {
			continue
		}
		fits := partnerFits(s.nodes[i], p)
		var b strings.Builder
		for k := 0; k < S; k++ {
			if k < len(fits) && fits[k] {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(r))
		isPin := i == pin
		if isPin {
			b.WriteString("/pin")
		}
		c := byKey[b.String()]
		if c == nil {
			c = &class{key: b.String(), room: r, fits: fits, pin: isPin}
			byKey[c.key] = c
			cls = append(cls, c)
		}
		c.nodes = append(c.nodes, j)
	}
	counts := make([]int, len(idx))
	if len(cls) == 0 {
		return counts, 0
	}
	// Least room first, then by class key (fit vector; the pinned node after its equals).
	sort.SliceStable(cls, func(a, b int) bool {
		if cls[a].room != cls[b].room {
			return cls[a].room < cls[b].room
		}
		return cls[a].key < cls[b].key
	})
	const src, cur, hub = 0, 1, 2
	C := len(cls)
	sink := 3 + S + C
	capm := make([][]int64, sink+1)
	for i := range capm {
		capm[i] = make([]int64, sink+1)
	}
	capm[src][cur] = 1
	capm[src][hub] = int64(need - 1)
	for k := 0; k < S && k < len(g.Siblings); k++ {
		if g.Siblings[k] > 0 {
			capm[hub][3+k] = int64(g.Siblings[k])
		}
	}
	okCur := g.Current >= 0 && g.Current < S
	for c, cl := range cls {
		v := 3 + S + c
		if okCur && g.Current < len(cl.fits) && cl.fits[g.Current] && (pin < 0 || cl.pin) {
			capm[cur][v] = 1
		}
		for k := 0; k < S; k++ {
			if k < len(cl.fits) && cl.fits[k] {
				capm[3+k][v] = int64(need)
			}
		}
	}
	var flow int64
	for c, cl := range cls {
		if flow >= int64(need) {
			break
		}
		v := 3 + S + c
		capm[v][sink] = int64(cl.room) * int64(len(cl.nodes))
		flow += maxFlow(capm, src, sink, int64(need)-flow)
	}
	for c, cl := range cls {
		x := int(capm[sink][3+S+c])
		for _, j := range cl.nodes {
			k := min(x, cl.room)
			counts[j] = k
			x -= k
		}
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

func (s *groupSolver) plan(domain string) *GroupPlan {
	P := len(s.partners)
	gp := &GroupPlan{Domain: domain}
	for _, n := range s.need {
		gp.Need += n
	}
	// Feasibility: assignments among the sub-domains where each partner fits alone, by Room
	// then Sub vector; the first that fits in some order wins.
	choices := make([][]int, P)
	for p := range s.subs {
		for a, sd := range s.subs[p] {
			if sd.alone >= s.need[p] {
				choices[p] = append(choices[p], a)
			}
		}
	}
	assigns := product(choices, 0)
	roomOf := func(as []int) int {
		r := 0
		for p, a := range as {
			r += s.subs[p][a].room
		}
		return r
	}
	slices.SortStableFunc(assigns, func(x, y []int) int {
		if c := cmp.Compare(roomOf(x), roomOf(y)); c != 0 {
			return c
		}
		for p := range x {
			if c := cmp.Compare(s.subs[p][x[p]].value, s.subs[p][y[p]].value); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, as := range assigns {
		o, ok := s.fits(as, -1, -1)
		if !ok {
			continue
		}
		gp.Feasible, gp.Room, gp.Holds = true, roomOf(as), gp.Need
		gp.Sub = make([]string, P)
		gp.Nodes = make([][]string, P)
		gp.placed = s.witness(o)
		for p, a := range as {
			gp.Sub[p] = s.subs[p][a].value
			g := s.partners[p].Gang
			for _, i := range s.subs[p][a].nodes {
				f := partnerFits(s.nodes[i], p)
				if g.Current < 0 || g.Current >= len(f) || !f[g.Current] || s.alone[p][i] <= 0 {
					continue
				}
				if _, ok := s.fits(as, p, i); ok {
					gp.Nodes[p] = append(gp.Nodes[p], s.nodes[i].Name)
				}
			}
		}
		return gp
	}
	gp.Holds, gp.placed = s.holds()
	return gp
}

// holds is the most members a sequential placement puts in the group domain, partners
// partial, over sub-domain assignments by decreasing upper bound (Σ members each partner
// places alone there), within maxHoldsAssignments / maxHoldsEvals.
func (s *groupSolver) holds() (int, map[string][]int) {
	P := len(s.partners)
	choices := make([][]int, P)
	for p := range s.subs {
		// sub-domains by what the partner places alone, most first
		for a := range s.subs[p] {
			choices[p] = append(choices[p], a)
		}
		slices.SortStableFunc(choices[p], func(x, y int) int {
			return cmp.Compare(s.subs[p][y].alone, s.subs[p][x].alone)
		})
		if len(choices[p]) == 0 {
			choices[p] = []int{-1}
		}
	}
	// trim the longest choice lists until the product is small enough
	for {
		n, longest := 1, 0
		for p := range choices {
			n *= len(choices[p])
			if len(choices[p]) > len(choices[longest]) {
				longest = p
			}
			if n > maxHoldsAssignments {
				break
			}
		}
		if n <= maxHoldsAssignments {
			break
		}
		choices[longest] = choices[longest][:len(choices[longest])-1]
	}
	assigns := product(choices, maxHoldsAssignments)
	ub := func(as []int) int {
		u := 0
		for p, a := range as {
			if a >= 0 {
				u += s.subs[p][a].alone
			}
		}
		return u
	}
	slices.SortStableFunc(assigns, func(x, y []int) int { return cmp.Compare(ub(y), ub(x)) })
	best, evals := 0, 0
	var bestO outcome
	for _, as := range assigns {
		if ub(as) <= best || evals >= maxHoldsEvals {
			break
		}
		for _, ord := range s.orders(as) {
			evals++
			if o := s.eval(as, ord, -1, -1); o.total > best {
				best, bestO = o.total, o
			}
		}
	}
	if best == 0 {
		return 0, nil
	}
	return best, s.witness(bestO)
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

// product lists the cartesian product of choices (at most limit entries when limit > 0).
func product(choices [][]int, limit int) [][]int {
	out := [][]int{{}}
	for _, cs := range choices {
		var next [][]int
		for _, prefix := range out {
			for _, c := range cs {
				if limit > 0 && len(next) >= limit {
					break
				}
				next = append(next, append(slices.Clone(prefix), c))
			}
		}
		out = next
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

// Members returns, for partner p, how many of its members the plan's witness placement puts
// on each node (nodes with none are left out): for a Feasible plan the partner's whole Need
// inside its chosen sub-domain, counted together with the other partners (no free slot
// counted twice). Nil for an infeasible plan's partner it placed nothing of, or p out of range.
func (g *GroupPlan) Members(p int) map[string]int {
	if g == nil || p < 0 {
		return nil
	}
	var out map[string]int
	for node, counts := range g.placed {
		if p < len(counts) && counts[p] > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[node] = counts[p]
		}
	}
	return out
}
