package plan

import (
	"slices"
	"strings"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
	fwk "k8s.io/kube-scheduler/framework"
)

// Node translation: the snapshot's nodes as planning counts them. Every step that plans
// over nodes comes here: a node's free room with the other gangs' reservations set aside
// (unless raw), plus, when preemption asks whether room is coming, what Terminating pods give
// back (back); the nodes of a domain of the last planning; the nodes inside a group domain.

// planOver computes the per-domain plans over a node set under the gang's topology key.
func (p *cycle) planOver(set []fwk.NodeInfo) map[string]*topology.DomainPlan {
	return p.planOverReturning(set, nil)
}

// planOverReturning is planOver with the room Terminating pods give back (back) counted free.
func (p *cycle) planOverReturning(set []fwk.NodeInfo, back map[string]gang.Returning) map[string]*topology.DomainPlan {
	p.tnodes, p.byDomain = p.topologyNodes(set, false, back), nil
	return topology.Plan(&p.gang, p.tnodes)
}

// topologyNodes translates the labelled nodes of set for the planner: raw counts room as if
// nobody reserved any, back is the room Terminating pods give back (nil: none counted).
func (p *cycle) topologyNodes(set []fwk.NodeInfo, raw bool, back map[string]gang.Returning) []topology.Node {
	tn := make([]topology.Node, 0, len(set))
	for _, ni := range set {
		node := ni.Node()
		if node == nil {
			continue
		}
		d := node.Labels[p.info.TopologyKey]
		if d == "" {
			continue
		}
		free, freePods := gang.NodeFree(ni, p.resources)
		freePods = p.setAsideReserved(node.Name, free, freePods, raw, back)
		fits := make([]bool, len(p.shapeFits))
		for s, f := range p.shapeFits {
			fits[s] = f.Fits(ni, free, freePods)
		}
		limit, limited := p.deviceRoom(ni, fits, raw)
		tn = append(tn, topology.Node{Name: node.Name, Domain: d, Free: free, FreePods: freePods, Fits: fits, Limited: limited, Limit: limit})
	}
	return tn
}

// setAsideReserved subtracts what other gangs reserve on the node from its free room, unless
// raw (and, when preemption asks whether room is coming, adds what Terminating pods give back
// there: back).
func (p *cycle) setAsideReserved(name string, free topology.Resources, freePods int64, raw bool, back map[string]gang.Returning) int64 {
	freePods = addReturning(back, name, free, freePods)
	r, ok := p.others[name]
	if !ok || raw {
		return freePods
	}
	for res := range free {
		free[res] -= r.Resources[res]
	}
	return freePods - r.Pods
}

// addReturning adds what Terminating pods give back on the node (back) to its free room, when
// the planner counts it (preemption's "is room coming" judgement only).
func addReturning(back map[string]gang.Returning, name string, free topology.Resources, freePods int64) int64 {
	b, ok := back[name]
	if !ok {
		return freePods
	}
	for res := range free {
		free[res] += b.Free[res]
	}
	return freePods + b.Pods
}

// nodesIn returns the domain's nodes of the last planning, as the planner saw them, sorted
// by name (the order a reservation is packed in).
func (p *cycle) nodesIn(domain string) []topology.Node {
	if p.byDomain != nil {
		return p.byDomain[domain]
	}
	var nodes []topology.Node
	for _, n := range p.tnodes {
		if n.Domain == domain {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b topology.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes
}

// inside keeps the nodes in group domain within (all of them when within is zero).
func inside(nodes []fwk.NodeInfo, within placement.DomainRef) []fwk.NodeInfo {
	if within.Key == "" {
		return nodes
	}
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		if n := ni.Node(); n != nil && n.Labels[within.Key] == within.Value {
			out = append(out, ni)
		}
	}
	return out
}

// outsideWithin reports a placed member on a node outside the commitment's group domain (a
// node relabelled while the group forms).
func (p *cycle) outsideWithin(within placement.DomainRef) bool {
	if within.Key == "" || len(p.placed) == 0 {
		return false
	}
	infos := p.pl.nodes()
	for _, m := range p.placed {
		if ni, err := infos.Get(m.Node); err != nil || ni.Node() == nil || ni.Node().Labels[within.Key] != within.Value {
			return true
		}
	}
	return false
}
