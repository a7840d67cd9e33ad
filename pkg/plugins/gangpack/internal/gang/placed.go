package gang

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Placed is a live gang member found on a node of the snapshot (bound or assumed).
type Placed struct {
	Pod    *v1.Pod
	Node   string
	Domain string // the node's value of the gang's topology key
}

// OnNodes returns the gang's live members found on the given snapshot nodes (bound or
// assumed), each with its node and its domain under the gang's topology key. A Terminating
// member still occupies its node (the snapshot counts its requests) but is not a placed
// member: it never counts toward minMember, adoption or "already placed".
func OnNodes(nodes []fwk.NodeInfo, g Info) []Placed {
	var out []Placed
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q.Namespace == g.Namespace && q.Labels[Label] == g.Name && Live(q) {
				out = append(out, Placed{Pod: q, Node: node.Name, Domain: node.Labels[g.TopologyKey]})
			}
		}
	}
	return out
}
