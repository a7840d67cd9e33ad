package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Reserve pins a deferred plan to the selected node's domain, then drains the commitment
// (placement.md §8).
func (pl *GangPack) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	logger := klog.FromContext(ctx)
	if _, _, member := gangOf(pod); member {
		pl.reserved.set(pod, nodeName)
	}
	pin := readPin(cs)
	if pin == nil {
		plan := readDeferred(cs)
		if plan == nil {
			return nil
		}
		var st *fwk.Status
		if pin, st = pl.pinDeferred(logger, cs, pod, plan, nodeName); st != nil {
			return st
		}
	}
	if r := pl.store.Drain(pin.Gang.Key, pin.ID); r.Committed {
		markFormed(cs)
		pl.pinsChanged()
		pl.failed.Clear(pin.Gang.owner())
		pl.wakeBlocked(logger)
	}
	return nil
}

func (pl *GangPack) pinDeferred(logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, plan *deferredState, nodeName string) (*pinState, *fwk.Status) {
	domain := ""
	if pl.handle != nil {
		if ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName); err == nil && ni.Node() != nil {
			domain = ni.Node().Labels[plan.Gang.TopologyKey]
		}
	}
	dp, ok := plan.Planned[domain]
	if !ok || dp.Room < plan.Need {
		return nil, fwk.NewStatus(fwk.Error, msgOutsideDeferredPlan)
	}
	c, outcome := pl.store.Pin(placement.PinRequest{Gang: plan.Gang.Key, Owner: plan.Gang.UID, Key: plan.Gang.TopologyKey,
		Domain: domain, Nodes: dp.Nodes, Remaining: plan.Need, SoleFit: len(plan.Planned) < 2})
	if outcome != placement.Pinned {
		return nil, fwk.NewStatus(fwk.Error, msgDomainUnavailable)
	}
	countPin(pinPinnedAfterFilter)
	pl.pinsChanged()
	pin := &pinState{Gang: plan.Gang, Domain: domain, ID: c.ID, SoleFit: c.SoleFit}
	cs.Write(pinStateKey, pin)
	logger.V(4).Info("gangpack.pinGang.result", "pod", klog.KObj(pod), "gang", plan.Gang.Key, "topologyKey", plan.Gang.TopologyKey,
		"domain", domain, "source", pinPinnedAfterFilter, "need", plan.Need, "remaining", c.Remaining, "candidates", len(dp.Candidates))
	return pin, nil
}

// Unreserve unwinds the member's attempt (placement.md §10). Idempotent: siblings rejected by
// the unwind come back here with an id that no longer owns anything.
func (pl *GangPack) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	if pin := readPin(cs); pin != nil {
		pl.unwind(klog.FromContext(ctx), pin.Gang.Key, pin.ID, causeUnreserve, false)
	}
	pl.attempts.forget(podKey(pod))
	pl.reserved.forget(pod.UID)
}
