package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Filter enforces the pinned domain for pinned members and the hold barrier for everyone
// else (placement.md §5). Messages carry no per-node numbers so the framework aggregates them.
func (pl *GangPack) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node not found")
	}
	if pin := readPin(cs); pin != nil {
		if node.Labels[pin.Gang.TopologyKey] == pin.Domain {
			return nil
		}
		klog.FromContext(ctx).V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "outside_domain", "domain", pin.Domain)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgOutsideDomain(pin.Domain))
	}
	if gang, held := pl.store.NodeHeld(node.Name, node.Labels); held {
		pl.blocked.add(pod)
		if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
			c, _ := pl.store.Get(gang)
			logger.Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "reserved", "domain", c.Domain, "heldBy", gang)
		}
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgNodeReserved)
	}
	return nil
}
