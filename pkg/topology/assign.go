package topology

import "sort"

// PerCopy is the size one member takes on a node when room is counted: the elementwise
// maximum request over the shapes that fit the node (NodeRoom's copy size). ok is false
// when no shape fits.
func PerCopy(g *Gang, n *Node) (Resources, bool) {
	per := Resources{}
	ok := false
	for s, req := range g.Shapes {
		if s >= len(n.Fits) || !n.Fits[s] {
			continue
		}
		ok = true
		for r, q := range req {
			if q > per[r] {
				per[r] = q
			}
		}
	}
	return per, ok
}

// shapeMembers is how many members of shape s the gang still places: its siblings of that shape,
// and the current member when s is its shape.
func shapeMembers(g *Gang, s int) int {
	k := 0
	if s < len(g.Siblings) {
		k = g.Siblings[s]
	}
	if s == g.Current {
		k++
	}
	return k
}

// Assign spreads up to want members of the gang (the current member and its siblings) over
// the nodes of one domain: each member goes to a node its shape fits, and no node takes more
// than its NodeRoom. It answers with how many members each node takes, filling the nodes of
// each interchangeable class in name order (packing), and how many members were assigned in
// all (less than want when the domain lacks room). It is the room a forming gang reserves.
func Assign(g *Gang, nodes []Node, want int) (map[string]int, int) {
	if want <= 0 || len(g.Shapes) == 0 {
		return map[string]int{}, 0
	}
	ptrs := make([]*Node, 0, len(nodes))
	for i := range nodes {
		ptrs = append(ptrs, &nodes[i])
	}
	cls := classesOf(g, ptrs)
	f := newFlowNet(0, len(g.Shapes), len(cls))
	for s := range g.Shapes {
		f.edge(flowSource, f.shape(s), int64(shapeMembers(g, s)))
	}
	for c, cl := range cls {
		f.room(c, int64(cl.room)*int64(len(cl.nodes)))
		f.fit(c, cl.fits, int64(want))
	}
	flow := f.run(int64(want))
	out := map[string]int{}
	for c, cl := range cls {
		// cl.nodes is sorted by name: the class's nodes fill in name order.
		spread(f.used(c), cl.room, len(cl.nodes), func(i, k int) { out[cl.nodes[i]] = k })
	}
	return out, int(flow)
}

// classesOf groups nodes into interchangeable classes (same fit vector and member room),
// ordered by class key, each with its nodes sorted by name. Nodes without room are left out.
func classesOf(g *Gang, nodes []*Node) []*nodeClass {
	classes := map[string]*nodeClass{}
	var order []string
	for _, n := range nodes {
		room := NodeRoom(g, n)
		if room <= 0 {
			continue
		}
		key := classKey(n.Fits, len(g.Shapes), room)
		c, ok := classes[key]
		if !ok {
			fits := make([]bool, len(g.Shapes))
			copy(fits, n.Fits)
			c = &nodeClass{fits: fits, room: room}
			classes[key] = c
			order = append(order, key)
		}
		c.nodes = append(c.nodes, n.Name)
	}
	sort.Strings(order)
	out := make([]*nodeClass, len(order))
	for i, k := range order {
		out[i] = classes[k]
		sort.Strings(out[i].nodes)
	}
	return out
}
