package gang

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Degraded reports whether a gang, given its pods as the API server shows them, is degraded:
// some live members are bound but fewer than minMember, and a replacement is pending (live,
// unbound, and not a member the scheduler already assumed on a node, which is binding or
// waiting at Permit). It also returns the bound live members.
func Degraded(pods []*v1.Pod, minMember int, assumed map[types.UID]struct{}) (degraded bool, bound int) {
	pending := 0
	for _, p := range pods {
		if !Live(p) {
			continue
		}
		if p.Spec.NodeName != "" {
			bound++
		} else if _, ok := assumed[p.UID]; !ok {
			pending++
		}
	}
	return bound > 0 && bound < minMember && pending > 0, bound
}
