package topology

// groupBrute enumerates member → node assignments in one group domain under the counts rule
// of partners.go (a node alone: NodeRoom; shared: per-copy requests, pods and Apart add up).
type groupBrute struct {
	parts   []Partner
	nodes   []*GroupNode
	need    []int
	perNode []int
	alone   [][]int
	perCopy [][]Resources
	cnt     [][]int // [node][partner]
	sub     []string
	fixed   []string
	pinP    int
	pinNode int
}

func newGroupBrute(parts []Partner, nodes []*GroupNode) *groupBrute {
	s := newGroupSolver(parts, nodes) // only its per-node figures (NodeRoom, per-copy)
	b := &groupBrute{parts: parts, nodes: s.nodes, need: s.need, perNode: s.perNode, alone: s.alone, perCopy: s.perCopy}
	b.cnt = make([][]int, len(b.nodes))
	for i := range b.cnt {
		b.cnt[i] = make([]int, len(parts))
	}
	b.sub = make([]string, len(parts))
	return b
}

func (b *groupBrute) keyOf(p, i int) string {
	k := b.parts[p].Key
	if k < 0 || k >= len(b.nodes[i].Sub) {
		return ""
	}
	return b.nodes[i].Sub[k]
}

// admissible applies the counts rule to node i.
func (b *groupBrute) admissible(i int) bool {
	users, total := 0, int64(0)
	for p, k := range b.cnt[i] {
		if k > 0 {
			users++
			total += int64(k)
			if b.perCopy[p][i] == nil || k > b.perNode[p] || k > b.alone[p][i] {
				return false
			}
		}
	}
	if users <= 1 {
		return true // k ≤ NodeRoom checked above
	}
	n := b.nodes[i]
	if total > n.FreePods {
		return false
	}
	used := Resources{}
	for p, k := range b.cnt[i] {
		for r, q := range b.perCopy[p][i] {
			if k > 0 && q > 0 {
				used[r] += int64(k) * q
			}
		}
	}
	for r, u := range used {
		if u > n.Free[r] {
			return false
		}
	}
	return true
}

// feasible reports whether every partner fits whole; fixed (nil = any) fixes the sub-domain
// per partner, and partner pinP's current member must be on node pinNode when pinP ≥ 0.
func (b *groupBrute) feasible(fixed []string, pinP, pinNode int) bool {
	b.fixed, b.pinP, b.pinNode = fixed, pinP, pinNode
	return b.rec(0, 0, 0, b.sibs(0))
}

func (b *groupBrute) sibs(p int) []int {
	if p >= len(b.parts) {
		return nil
	}
	g := b.parts[p].Gang
	out := make([]int, len(g.Shapes))
	for k := range out {
		if k < len(g.Siblings) {
			out[k] = g.Siblings[k]
		}
	}
	return out
}

func (b *groupBrute) rec(p, j, minShape int, sibLeft []int) bool {
	if p == len(b.parts) {
		return true
	}
	if j == b.need[p] {
		return b.rec(p+1, 0, 0, b.sibs(p+1))
	}
	g := b.parts[p].Gang
	try := func(k int) bool {
		for i := range b.nodes {
			f := partnerFits(b.nodes[i], p)
			if k >= len(f) || !f[k] {
				continue
			}
			v := b.keyOf(p, i)
			if v == "" {
				continue
			}
			if j == 0 {
				if b.fixed != nil && v != b.fixed[p] {
					continue
				}
				if p == b.pinP && i != b.pinNode {
					continue
				}
				b.sub[p] = v
			} else if v != b.sub[p] {
				continue
			}
			next := k // siblings in non-decreasing shape order; the current one is apart
			if j == 0 {
				next = 0
			}
			b.cnt[i][p]++
			ok := b.admissible(i) && b.rec(p, j+1, next, sibLeft)
			b.cnt[i][p]--
			if ok {
				return true
			}
		}
		return false
	}
	if j == 0 {
		if g.Current < 0 || g.Current >= len(g.Shapes) {
			return false
		}
		return try(g.Current)
	}
	for k := minShape; k < len(sibLeft); k++ {
		if sibLeft[k] == 0 {
			continue
		}
		sibLeft[k]--
		ok := try(k)
		sibLeft[k]++
		if ok {
			return true
		}
	}
	return false
}
