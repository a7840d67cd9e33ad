package plan

import (
	"math"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The numbers one planning gives the quality gauges: each domain's member room and free units
// of the gang's primary extended resource.

// memberRooms is, per domain, the sum over its nodes of the node's member room (topology.NodeRoom)
// with no per-node cap at the gang's need, and without the "can the whole gang
// form here" condition of the planner's room: how many members of this gang's shape the
// domain's nodes can take.
func memberRooms(g *topology.Gang, nodes []topology.Node) map[string]int {
	uncapped := *g
	uncapped.Need = math.MaxInt32
	out := map[string]int{}
	for i := range nodes {
		n := &nodes[i]
		if n.Domain == "" {
			continue
		}
		out[n.Domain] += topology.NodeRoom(&uncapped, n)
	}
	return out
}

// freeUnits sums allocatable − requested of resource (clamped at 0 per node) per domain.
func freeUnits(nodes []topology.Node, resource string) map[string]int64 {
	out := map[string]int64{}
	for i := range nodes {
		n := &nodes[i]
		if n.Domain == "" {
			continue
		}
		if f := n.Free[resource]; f > 0 {
			out[n.Domain] += f
		} else if _, ok := out[n.Domain]; !ok {
			out[n.Domain] = 0
		}
	}
	return out
}

// domainStats is one domain's numbers for the quality gauges: its member room and, when
// resource is set, its free units of that resource.
func domainStats(g *topology.Gang, nodes []topology.Node, d, resource string) (room int, free int64) {
	room = memberRooms(g, nodes)[d]
	if resource != "" {
		free = freeUnits(nodes, resource)[d]
	}
	return room, free
}
