package topology

import "sort"

// Preemption for a placement group: the group is one preemptor, and a candidate is one group
// domain where every partner fits whole once the victims are gone (PlanGroup decides, so the
// partners never count the same freed slot). GroupNode.Fits must report only what evicting
// pods cannot change (node constraints); a shape's resource fit is recomputed from Free and
// FreePods plus what the evicted units give back, as for a single gang.

// GroupPreemptionCandidates returns, for every group domain where the group fits once some
// lower-priority units are evicted, that domain with its minimal victim set, best first
// (ComparePreemptionCandidates). Nodes with an empty Group are ignored.
func GroupPreemptionCandidates(partners []Partner, priority int32, nodes []GroupNode, units []VictimUnit) []PreemptionCandidate {
	byGroup := map[string][]GroupNode{}
	var order []string
	for _, n := range nodes {
		if n.Group == "" {
			continue
		}
		if _, ok := byGroup[n.Group]; !ok {
			order = append(order, n.Group)
		}
		byGroup[n.Group] = append(byGroup[n.Group], n)
	}
	sort.Strings(order)
	var out []PreemptionCandidate
	for _, d := range order {
		gd := &groupDomain{partners: partners, domain: d, nodes: byGroup[d]}
		if victims, room, need, ok := gd.minimal(priority, units); ok {
			out = append(out, NewPreemptionCandidate(d, &Gang{Need: need}, units, victims, room))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return ComparePreemptionCandidates(&out[i], &out[j]) < 0 })
	return out
}

// groupDomain is one group domain being judged, with what the units evicted so far give back.
type groupDomain struct {
	partners []Partner
	domain   string
	nodes    []GroupNode
	freed    map[string]NodeFree // node → resources and pod slots given back
}

// plan plans the group over the domain's nodes with the freed room added.
func (gd *groupDomain) plan() *GroupPlan {
	nodes := make([]GroupNode, len(gd.nodes))
	for i, n := range gd.nodes {
		f := gd.freed[n.Name]
		free := Resources{}
		for r, q := range n.Free {
			free[r] = max(q, 0)
		}
		for r, q := range f.Resources {
			free[r] += q
		}
		pods := max(n.FreePods, 0) + f.Pods
		fits := make([][]bool, len(n.Fits))
		for p := range n.Fits {
			fits[p] = make([]bool, len(n.Fits[p]))
			for s, ok := range n.Fits[p] {
				fits[p][s] = ok && pods > 0 && p < len(gd.partners) && s < len(gd.partners[p].Gang.Shapes) &&
					Within(gd.partners[p].Gang.Shapes[s], free)
			}
		}
		n.Free, n.FreePods, n.Fits = free, pods, fits
		nodes[i] = n
	}
	return PlanGroup(gd.partners, nodes)[gd.domain]
}

func (gd *groupDomain) apply(u *VictimUnit, sign int64) {
	for name, f := range u.Frees {
		cur := gd.freed[name]
		if cur.Resources == nil {
			cur.Resources = Resources{}
		}
		for r, q := range f.Resources {
			cur.Resources[r] += sign * q
		}
		cur.Pods += sign * f.Pods
		gd.freed[name] = cur
	}
}

// touches reports whether evicting the unit frees anything on the domain's nodes.
func (gd *groupDomain) touches(u *VictimUnit) bool {
	for _, n := range gd.nodes {
		if _, ok := u.Frees[n.Name]; ok {
			return true
		}
	}
	return false
}

// minimal evicts every eligible unit on paper, checks the group fits, then reprieves units in
// reprieve order while it still fits, until a pass reprieves nothing.
func (gd *groupDomain) minimal(priority int32, units []VictimUnit) (victims []int, room, need int, ok bool) {
	gd.freed = map[string]NodeFree{}
	var cands []int
	for i := range units {
		if units[i].Priority < priority && gd.touches(&units[i]) {
			cands = append(cands, i)
		}
	}
	sort.SliceStable(cands, func(x, y int) bool { return reprieveFirst(units, cands[x], cands[y]) })
	for _, u := range cands {
		gd.apply(&units[u], +1)
	}
	p := gd.plan()
	if p == nil || !p.Feasible {
		return nil, 0, 0, false
	}
	room, need = p.Room, p.Need
	victims = reprieve(cands, func(u int) bool {
		gd.apply(&units[u], -1)
		if q := gd.plan(); q != nil && q.Feasible {
			room = q.Room
			return true
		}
		gd.apply(&units[u], +1)
		return false
	})
	return victims, room, need, true
}
