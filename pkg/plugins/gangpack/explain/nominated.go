package explain

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// nominatedFor are the pods kube-scheduler's Filter counts on their nominated node when it
// filters pod (framework.addGENominatedPods): pending pods of the same scheduler nominated to
// a node (status.nominatedNodeName, no spec.nodeName), of priority at least pod's, other than
// pod. Each is returned as a copy on that node, without its pod-group label (it occupies room
// and is no placed member). Left out, as the planner counts them already: the members of
// pod's own gang (its need), and a gang's members nominated to a node its forming pin
// reserves room on, up to the members reserved there (the reservation is set aside already).
func (c *Cluster) nominatedFor(pod *v1.Pod) []*v1.Pod {
	if pod == nil {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	own, _, member := gang.Of(pod)
	covered := c.reservedMembers()
	var out []*v1.Pod
	for _, p := range c.Pods {
		node := p.Status.NominatedNodeName
		if node == "" || p.Spec.NodeName != "" || p.UID == pod.UID || !gang.Live(p) ||
			p.Spec.SchedulerName != pod.Spec.SchedulerName || corev1helpers.PodPriority(p) < prio {
			continue
		}
		if key, _, ok := gang.Of(p); ok {
			if member && key == own {
				continue
			}
			if covered[key][node] > 0 {
				covered[key][node]--
				continue
			}
		}
		q := p.DeepCopy()
		q.Spec.NodeName = node
		delete(q.Labels, gang.Label)
		out = append(out, q)
	}
	return out
}

// reservedMembers is the member room each forming pin reserves, per gang and node.
func (c *Cluster) reservedMembers() map[string]map[string]int {
	out := map[string]map[string]int{}
	if c.Reservations == nil {
		return out
	}
	for _, p := range c.Reservations.Pins {
		if !p.Forming {
			continue
		}
		for _, s := range p.Reserved {
			if out[p.Gang] == nil {
				out[p.Gang] = map[string]int{}
			}
			out[p.Gang][s.Node] += s.Members
		}
	}
	return out
}
