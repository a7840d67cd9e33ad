package topology

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
// candidate nodes are missed; a Feasible plan or candidate is never wrong). The assignments
// are walked lazily, best first, within a bound (partners_queue.go); a domain whose search
// reaches the bound is reported Truncated.
//
// Files: partners.go (types and answers), partners_solver.go (one group domain's figures and
// the sequential placement), partners_queue.go (the feasibility search), partners_search.go
// (the plan of a domain, Holds).

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
	// Limits is, per partner, the most of its members the node's DRA devices allow (Node's
	// Limit); 0 or missing: no device limit. The model shares a node's resources among
	// partners, not its devices: a node one device-limited partner uses takes no other
	// device-limited partner (conservative when they use different devices).
	Limits []int
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
	// Truncated is set when the search stopped at its bound (partners_queue.go) before it
	// found a fit; Feasible is false then, although a fit may exist.
	Truncated bool

	// placed is the witness: node name → members per partner (tests check it).
	placed map[string][]int
}

// PlanGroup computes a GroupPlan for every group domain that has at least one node in nodes
// (nodes with an empty Group are ignored). Node names are assumed unique. No partners → nil.
func PlanGroup(partners []Partner, nodes []GroupNode) map[string]*GroupPlan {
	if len(partners) == 0 {
		return nil
	}
	byGroup := byValue(nodes, func(n *GroupNode) string { return n.Group })
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
