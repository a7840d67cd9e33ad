package gang

import (
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// TerminatingSlack is how long past its deletionTimestamp a Terminating pod's room still
// counts as coming back (the kubelet's kill and the API's final delete usually take seconds).
const TerminatingSlack = 2 * time.Minute

// ComingBack reports whether the pod is Terminating and its room still counts as coming back.
func ComingBack(p *v1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Before(p.DeletionTimestamp.Add(TerminatingSlack))
}

// Stuck reports whether the pod is Terminating past the bound: its room is not waited for.
func Stuck(p *v1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && !ComingBack(p, now)
}

// Returning is the room the Terminating pods on one node give back.
type Returning struct {
	Free topology.Resources
	Pods int64 // how many Terminating pods, and so how many pod slots
}

// ReturningRoom returns, per node of set, the room its Terminating pods give back (Stuck ones
// left out); nil when there is none.
func ReturningRoom(set []fwk.NodeInfo, now time.Time) map[string]Returning {
	var out map[string]Returning
	for _, ni := range set {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q == nil || !ComingBack(q, now) {
				continue
			}
			if out == nil {
				out = map[string]Returning{}
			}
			r := out[node.Name]
			if r.Free == nil {
				r.Free = topology.Resources{}
			}
			for k, v := range Request(q) {
				r.Free[k] += v
			}
			r.Pods++
			out[node.Name] = r
		}
	}
	return out
}

// FreedBy returns, per node, what the victims give back when they are gone.
func FreedBy(victims []*v1.Pod) (map[string]topology.Resources, map[string]int64) {
	freed := map[string]topology.Resources{}
	pods := map[string]int64{}
	for _, v := range victims {
		n := v.Spec.NodeName
		if freed[n] == nil {
			freed[n] = topology.Resources{}
		}
		for r, q := range Request(v) {
			freed[n][r] += q
		}
		pods[n]++
	}
	return freed, pods
}
