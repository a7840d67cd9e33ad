package topology

import (
	"cmp"
	"slices"
)

// Domain preferences: among the domains that fit the whole gang, the one its members prefer
// most wins, then best fit (the smallest room), then the rank, then the byte-wise smallest
// value. A domain's preference is what kube-scheduler's NodeAffinity score would give the
// members placed there: the sum, over the members planned into the domain, of the weights of
// the preferred node-affinity terms their nodes match.

// BestFitPreferred returns the fitting domain (room ≥ size) with the highest preference, ties
// going to BestFitRanked's order. prefer nil (no preferences) gives exactly BestFitRanked.
func BestFitPreferred(rooms map[string]int, size int, prefer func(domain string) int64, rank func(domain string) int) (string, bool) {
	if prefer == nil {
		return BestFitRanked(rooms, size, rank)
	}
	var top int64
	found := false
	for d, r := range rooms {
		if r < size || size <= 0 {
			continue
		}
		if v := prefer(d); !found || v > top {
			top, found = v, true
		}
	}
	if !found {
		return "", false
	}
	preferred := make(map[string]int, len(rooms))
	for d, r := range rooms {
		if r >= size && prefer(d) == top {
			preferred[d] = r
		}
	}
	return BestFitRanked(preferred, size, rank)
}

// slot is a member of one shape on one node (nodes[node]), worth score.
type slot struct {
	shape, node int
	score       int64
}

// Preference returns the preference of placing the gang's Need members on nodes (one domain's
// nodes): score(i, s) is what a member of shape s scores on nodes[i]. The members are planned
// greedily: the best-scoring node a member fits first, each node holding at most its member
// room (NodeRoom), each shape at most its unplaced members (Siblings, plus the current
// member). For a gang of one shape this is the largest total its members can reach; with
// several shapes competing for the same nodes it can fall short of it.
func Preference(g *Gang, nodes []Node, score func(i, shape int) int64) int64 {
	demand := make([]int, len(g.Shapes))
	for s := range demand {
		if s < len(g.Siblings) {
			demand[s] = g.Siblings[s]
		}
		if s == g.Current {
			demand[s]++
		}
	}
	var slots []slot
	room := make([]int, len(nodes))
	for i := range nodes {
		room[i] = NodeRoom(g, &nodes[i])
		if room[i] <= 0 {
			continue
		}
		for s := range g.Shapes {
			if s < len(nodes[i].Fits) && nodes[i].Fits[s] && demand[s] > 0 {
				slots = append(slots, slot{shape: s, node: i, score: score(i, s)})
			}
		}
	}
	// Highest score first; equal scores in node order, then shape order (deterministic).
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(b.score, a.score) })
	left := g.Need
	var total int64
	for _, sl := range slots {
		if left == 0 {
			break
		}
		i := sl.node
		k := min(room[i], demand[sl.shape], left)
		if k <= 0 {
			continue
		}
		room[i] -= k
		demand[sl.shape] -= k
		left -= k
		total += int64(k) * sl.score
	}
	return total
}

// BestGroupFitPreferred is BestGroupFit among the feasible group domains with the highest
// preference; prefer nil gives exactly BestGroupFit.
func BestGroupFitPreferred(plans map[string]*GroupPlan, prefer func(domain string) int64) (string, bool) {
	if prefer == nil {
		return BestGroupFit(plans)
	}
	var top int64
	found := false
	for d, p := range plans {
		if p != nil && p.Feasible && (!found || prefer(d) > top) {
			top, found = prefer(d), true
		}
	}
	preferred := make(map[string]*GroupPlan, len(plans))
	for d, p := range plans {
		if p != nil && p.Feasible && prefer(d) == top {
			preferred[d] = p
		}
	}
	return BestGroupFit(preferred)
}

// PreferSlots moves a reservation's members (counts per node name, as Assign gives them) onto
// the nodes the gang prefers: within each class of interchangeable nodes (same fit vector and
// member room), the largest counts go to the highest-scoring nodes (score(i) for nodes[i]),
// ties in name order. Every class keeps its members, so the reservation still fits.
func PreferSlots(g *Gang, nodes []Node, counts map[string]int, score func(i int) int64) map[string]int {
	type member struct {
		i     int
		score int64
	}
	classes := map[string][]member{}
	var order []string
	for i := range nodes {
		room := NodeRoom(g, &nodes[i])
		if room <= 0 {
			continue
		}
		key := classKey(nodes[i].Fits, len(g.Shapes), room)
		if _, ok := classes[key]; !ok {
			order = append(order, key)
		}
		classes[key] = append(classes[key], member{i: i, score: score(i)})
	}
	out := make(map[string]int, len(counts))
	for _, key := range order {
		ms := classes[key]
		var ks []int
		for _, m := range ms {
			if k := counts[nodes[m.i].Name]; k > 0 {
				ks = append(ks, k)
			}
		}
		slices.SortFunc(ks, func(a, b int) int { return b - a })
		slices.SortStableFunc(ms, func(a, b member) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return cmp.Compare(nodes[a.i].Name, nodes[b.i].Name)
		})
		for j, k := range ks {
			out[nodes[ms[j].i].Name] = k
		}
	}
	return out
}
