package topology

import (
	"cmp"
	"container/heap"
	"slices"
)

// The feasibility search of one group domain. Each partner may go to any of its sub-domains
// where it fits alone, and an assignment picks one per partner. Assignments are tried in
// order of their Room (Σ the chosen sub-domains' member room), then of their Sub vector
// (partner by partner, byte-wise); the first that fits in some partner order wins.
//
// The product of the choices is never listed (three partners of one member keyed by node
// name over 1,000 nodes have 10^9 assignments). It is walked from a priority queue, best
// first: each partner's choices are sorted by (room, value), the queue starts with every
// partner's first choice, and taking an assignment queues its successors, each moving one
// partner to its next choice (only partners at or after the one its parent moved, so every
// assignment has one parent and is queued once). A successor is never better than its
// parent, so assignments leave the queue in exactly the sorted order.
//
// A pair of partners whose chosen sub-domains share nodes that cannot hold both (their
// member room there, counted as the placement model allows for shared nodes, is below their
// joint need) makes the assignment fail whatever the others do; the successors that keep
// that pair fixed, and all their descendants, are not queued. This only skips assignments
// that cannot fit, so the first fitting assignment is the one the sorted product gives.
//
// The search is bounded: it takes at most maxGroupAssignments assignments from the queue
// and runs at most maxGroupPlacements sequential placements (the costly step) per group
// domain. A domain where the bound is reached before a fit is found is reported not Feasible
// with Truncated set. (Variables so that tests can lower them.)
var (
	maxGroupAssignments = 1 << 14
	maxGroupPlacements  = 1 << 12
)

// choices lists, per partner, the sub-domains (indices into subs) where the partner fits
// alone, by room, then value.
func (s *groupSolver) choices() [][]int {
	out := make([][]int, len(s.partners))
	for p := range s.subs {
		for a, sd := range s.subs[p] {
			if sd.alone >= s.need[p] {
				out[p] = append(out[p], a)
			}
		}
		slices.SortStableFunc(out[p], func(x, y int) int { return cmp.Compare(s.subs[p][x].room, s.subs[p][y].room) })
	}
	return out
}

// search returns the first assignment in order that fits, with its placement; truncated
// reports that a bound ended the search before one was found.
func (s *groupSolver) search() (as []int, o outcome, ok, truncated bool) {
	P := len(s.partners)
	q := &assignQueue{s: s, choices: s.choices()}
	for p := range q.choices {
		if len(q.choices[p]) == 0 {
			return nil, outcome{}, false, false
		}
	}
	first := make([]int, P)
	heap.Push(q, assignItem{pos: first, room: s.roomOf(q.assignment(first))})
	conflicts := map[pairKey]bool{}
	taken, evals := 0, 0
	for q.Len() > 0 {
		if taken >= maxGroupAssignments {
			return nil, outcome{}, false, true
		}
		it := heap.Pop(q).(assignItem)
		taken++
		cur := q.assignment(it.pos)
		m := s.firstConflict(cur, conflicts)
		for k := it.moved; k < P && k <= m; k++ {
			if it.pos[k]+1 < len(q.choices[k]) {
				next := slices.Clone(it.pos)
				next[k]++
				heap.Push(q, assignItem{pos: next, moved: k, room: s.roomOf(q.assignment(next))})
			}
		}
		if m < P {
			continue
		}
		for _, ord := range s.orders(cur) {
			if evals >= maxGroupPlacements {
				return nil, outcome{}, false, true
			}
			evals++
			if o := s.eval(cur, ord, -1, -1); s.whole(o) {
				return cur, o, true, false
			}
		}
	}
	return nil, outcome{}, false, false
}

// pairKey names partners p < q in sub-domains a and b.
type pairKey struct{ p, a, q, b int }

// firstConflict returns the smallest j such that partners i < j conflict in assignment as
// (conflict), or len(as) when no pair does. Every assignment that keeps as[0..j] fails.
func (s *groupSolver) firstConflict(as []int, memo map[pairKey]bool) int {
	for j := 1; j < len(as); j++ {
		for i := 0; i < j; i++ {
			k := pairKey{i, as[i], j, as[j]}
			c, seen := memo[k]
			if !seen {
				c = s.conflict(i, as[i], j, as[j])
				memo[k] = c
			}
			if c {
				return j
			}
		}
	}
	return len(as)
}

// conflict reports whether partners p and q cannot both be whole in sub-domains a and b,
// whatever the other partners do: the nodes of the two sub-domains hold fewer of their
// members than need[p]+need[q]. A node one of them uses alone holds at most its NodeRoom;
// a node both use holds at most as many copies of the smaller per-copy request as its free
// resources and pod slots take (the counts rule). Disjoint sub-domains never conflict (each
// partner fits alone in its own).
func (s *groupSolver) conflict(p, a, q, b int) bool {
	x, y := s.subs[p][a].nodes, s.subs[q][b].nodes
	want := s.need[p] + s.need[q]
	shared, total := false, 0
	for i, j := 0, 0; i < len(x) || j < len(y); {
		switch {
		case j == len(y) || (i < len(x) && x[i] < y[j]):
			total += s.alone[p][x[i]]
			i++
		case i == len(x) || y[j] < x[i]:
			total += s.alone[q][y[j]]
			j++
		default:
			n := x[i]
			shared = true
			total += max(s.alone[p][n], s.alone[q][n], s.sharedCap(n, p, q, want))
			i++
			j++
		}
		if total >= want {
			return false
		}
	}
	return shared
}

// sharedCap bounds the members of p and q together on node n when both use it: copies of
// the smaller per-copy request of each resource both need, and pod slots (at most limit).
func (s *groupSolver) sharedCap(n, p, q, limit int) int {
	pp, pq := s.perCopy[p][n], s.perCopy[q][n]
	if pp == nil || pq == nil {
		return 0
	}
	node := s.nodes[n]
	c := min(max(node.FreePods, 0), int64(limit))
	for r, x := range pp {
		y := pq[r]
		if x <= 0 || y <= 0 {
			continue
		}
		c = min(c, max(node.Free[r], 0)/min(x, y))
	}
	return int(c)
}

// assignItem is a queued assignment: pos[p] indexes choices[p]; moved is the partner its
// parent moved (successors move only partners from there on); room is its Room.
type assignItem struct {
	pos   []int
	moved int
	room  int
}

// assignQueue orders assignments by Room, then Sub vector.
type assignQueue struct {
	s       *groupSolver
	choices [][]int
	items   []assignItem
}

// assignment turns choice positions into sub-domain indices.
func (q *assignQueue) assignment(pos []int) []int {
	as := make([]int, len(pos))
	for p, i := range pos {
		as[p] = q.choices[p][i]
	}
	return as
}

func (q *assignQueue) Len() int { return len(q.items) }

func (q *assignQueue) Less(i, j int) bool {
	x, y := q.items[i], q.items[j]
	if x.room != y.room {
		return x.room < y.room
	}
	for p := range x.pos {
		a, b := q.choices[p][x.pos[p]], q.choices[p][y.pos[p]]
		if c := cmp.Compare(q.s.subs[p][a].value, q.s.subs[p][b].value); c != 0 {
			return c < 0
		}
	}
	return false
}

func (q *assignQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }

func (q *assignQueue) Push(x any) { q.items = append(q.items, x.(assignItem)) }

func (q *assignQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}
