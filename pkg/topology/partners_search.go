package topology

import (
	"cmp"
	"slices"
)

// maxHoldsAssignments bounds the sub-domain assignments tried for Holds in an infeasible
// group domain, and maxHoldsEvals the sequential placements run for it. The feasibility
// search has its own bounds (MaxGroupAssignments, MaxGroupPlacements in partners_queue.go).
const (
	maxHoldsAssignments = 1 << 14
	maxHoldsEvals       = 1 << 12
)

func (s *groupSolver) plan(domain string) *GroupPlan {
	gp := &GroupPlan{Domain: domain}
	for _, n := range s.need {
		gp.Need += n
	}
	as, o, ok, truncated := s.search()
	if !ok {
		gp.Truncated = truncated
		gp.Holds, gp.placed = s.holds()
		return gp
	}
	s.feasible(gp, as, o)
	return gp
}

// feasible fills gp with the feasible assignment as (one sub-domain per partner) and its
// outcome o: the room, each partner's sub-domain, a placement witness, and each partner's
// candidate nodes (those where its current member can go with the rest still placed).
func (s *groupSolver) feasible(gp *GroupPlan, as []int, o outcome) {
	P := len(s.partners)
	gp.Feasible, gp.Room, gp.Holds = true, s.roomOf(as), gp.Need
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
}

func (s *groupSolver) roomOf(as []int) int {
	r := 0
	for p, a := range as {
		r += s.subs[p][a].room
	}
	return r
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
