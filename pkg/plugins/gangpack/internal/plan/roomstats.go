package plan

import (
	"math"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

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

// primaryResource returns the extended resource with the largest per-member request among
// the shapes (ties by name); ok is false when no shape requests an extended resource.
func primaryResource(shapes []topology.Resources) (string, bool) {
	best, bestQ := "", int64(0)
	for _, s := range shapes {
		for r, q := range s {
			if q <= 0 || !v1helper.IsExtendedResourceName(v1.ResourceName(r)) {
				continue
			}
			if q > bestQ || (q == bestQ && r < best) {
				best, bestQ = r, q
			}
		}
	}
	return best, best != ""
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
