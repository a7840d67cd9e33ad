// Package topology holds OMEGangPack's domain arithmetic: how many gang members a node or a
// domain can take, whether a whole gang can form in a domain, which nodes may host the member
// being scheduled, and the best-fit choice among domains. It has no Kubernetes dependencies:
// the plugin translates pods and nodes into the plain values below.
package topology

import "maps"

// Resources maps a resource name to an amount in one consistent unit per name
// (for example milli-CPU, bytes, device count).
type Resources map[string]int64

// Gang is what a plan is made for. Members are grouped into shapes: members with the same
// requests and the same node constraints share a shape, so planning cost depends on the
// number of distinct shapes, not on the gang's size.
type Gang struct {
	// Shapes holds the resource request of each distinct member shape.
	Shapes []Resources
	// Current is the index in Shapes of the member being scheduled (template T[0]).
	Current int
	// Siblings is, per shape, how many other unplaced members (templates other than the
	// current one) have that shape.
	Siblings []int
	// Need is how many members must still get a node, the current one included (>= 1).
	Need int
	// Apart is true when members must stay one per node (required anti-affinity among them).
	Apart bool
}

// Node is a node as the planner sees it.
type Node struct {
	Name string
	// Domain is the node's value of the gang's topology key; "" = in no domain.
	Domain string
	// Free is allocatable minus requested, per resource. Missing names count as 0.
	Free Resources
	// FreePods is the number of additional pods the node admits.
	FreePods int64
	// Fits reports, per shape, whether a member of that shape passes the node's hard
	// constraints and resource fit (the plugin's fits(pod, node)).
	Fits []bool
	// Limited caps the node's member room at Limit: what its DRA devices allow (the
	// plugin's device room); unset, only resources and pods count.
	Limited bool
	Limit   int
}

// NodeRoom returns how many members of the gang the node can hold at once: copies of the
// largest fitting shape that its free resources allow, capped at one when members stay
// apart, at Need otherwise, and at the node's device limit (Limited); 0 when no shape fits.
func NodeRoom(g *Gang, n *Node) int {
	perNode := g.Need
	if g.Apart {
		perNode = 1
	}
	if perNode < 1 {
		perNode = 1
	}
	perCopy, anyFit := PerCopy(g, n)
	if !anyFit {
		return 0
	}
	copies := n.FreePods
	for r, q := range perCopy {
		if q <= 0 {
			continue
		}
		free := n.Free[r]
		if free < 0 {
			free = 0
		}
		if c := free / q; c < copies {
			copies = c
		}
	}
	room := int64(perNode)
	if copies < room {
		room = copies
	}
	if room < 1 {
		room = 1
	}
	if n.Limited && int64(n.Limit) < room {
		room = int64(max(n.Limit, 0))
	}
	return int(room)
}

// Without returns rooms (a room per domain) less the excluded domains; rooms itself when
// nothing is excluded.
func Without(rooms map[string]int, excluded map[string]struct{}) map[string]int {
	if len(excluded) == 0 {
		return rooms
	}
	out := maps.Clone(rooms)
	maps.DeleteFunc(out, func(d string, _ int) bool {
		_, ok := excluded[d]
		return ok
	})
	return out
}
