package gangpack

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Filter enforces the pinned domain for pinned members and the hold barrier for everyone:
// no pod may use a node held by another gang's forming commitment (a pinned member of a
// committed gang, placed beyond minMember, included). Messages carry no per-node numbers so
// the framework aggregates them.
func (pl *GangPack) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node not found")
	}
	own := ""
	if pin := readPin(cs); pin != nil {
		if node.Labels[pin.Gang.TopologyKey] != pin.Domain {
			klog.FromContext(ctx).V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "outside_domain", "domain", pin.Domain)
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgOutsideDomain(pin.Domain))
		}
		own = pin.Gang.Key
	}
	generation := pl.store.Generation()
	if pl.doubts.blocks(node.Name, pod.UID, time.Now()) {
		pl.parkBlocked(klog.FromContext(ctx), pod, generation)
		return fwk.NewStatus(fwk.Unschedulable, msgBindInDoubt)
	}
	gang, held := pl.store.NodeHeld(node.Name, node.Labels)
	if !held || gang == own {
		return nil
	}
	logger := klog.FromContext(ctx)
	pl.parkBlocked(logger, pod, generation)
	if v := logger.V(4); v.Enabled() {
		c, _ := pl.store.Get(gang)
		v.Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "reserved", "domain", c.Domain, "heldBy", gang)
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgNodeReserved)
}
