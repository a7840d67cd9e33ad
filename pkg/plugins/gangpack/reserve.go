package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Reserve counts the pod in the bind window (pace.go), records the member's node, pins a
// deferred plan to the selected node's domain, then drains the commitment; the drain that
// commits the gang lifts its hold. Room the drain gives back (the hold lifted, or a slot of
// another node consumed) wakes the pods it refused.
func (pl *GangPack) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	logger := klog.FromContext(ctx)
	pl.paceAssumed(pod)
	if _, _, member := gang.Of(pod); member {
		pl.ledger.MemberReserved(pod, nodeName)
		pl.evaluator.PlacedAgain(pod.UID)
	}
	pin := plan.ReadPin(cs)
	if pin == nil {
		deferred := plan.ReadDeferred(cs)
		if deferred == nil {
			return nil
		}
		var st *fwk.Status
		if pin, st = pl.pinDeferred(logger, cs, pod, deferred, nodeName); st != nil {
			return st
		}
	}
	if pl.ledger.Drain(logger, pin.Gang, pin.ID, nodeName) {
		markFormed(cs)
	}
	return nil
}

// Unreserve unwinds the member's attempt and, when the pod failed in binding after Permit
// admitted it, puts its node in doubt (doubt.go). It first hands the nomination kube-scheduler
// published for this attempt back to the pod copy its failure handler clears (nominate.go). Idempotent: siblings rejected by
// the unwind come back here with an id that no longer owns anything. A surplus member (its
// gang was committed before it was planned) unwinds nothing: the gang formed without it.
func (pl *GangPack) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	pl.paceFinished(pod, false)
	if pl.restoreNomination(cs, pod, nodeName) {
		klog.FromContext(ctx).V(4).Info("gangpack.Unreserve.nomination", "pod", klog.KObj(pod), "node", nodeName)
	}
	if pin := plan.ReadPin(cs); pin != nil && !pin.Surplus {
		pl.ledger.UnwindOnUnreserve(klog.FromContext(ctx), pin.Gang, pin.ID)
	}
	if pl.ledger.MemberUnreserved(pod, nodeName) {
		klog.FromContext(ctx).V(4).Info("gangpack.Unreserve.bind_in_doubt", "pod", klog.KObj(pod), "node", nodeName)
	}
}

// formedStateKey marks, in CycleState, the member whose Reserve drained the commitment to 0.
const formedStateKey fwk.StateKey = "gangpack.formed"

type formedState struct{}

func (s *formedState) Clone() fwk.StateData { return s }

// markFormed is the Reserve hook for a drain that committed the gang.
func markFormed(cs fwk.CycleState) {
	if cs != nil {
		cs.Write(formedStateKey, &formedState{})
	}
}

func formed(cs fwk.CycleState) bool {
	_, ok := gang.ReadState[*formedState](cs, formedStateKey)
	return ok
}

// pinDeferred pins the deferred plan to the domain of the node the filters left (Reserve).
func (pl *GangPack) pinDeferred(logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, d *plan.Deferred, nodeName string) (*plan.Pin, *fwk.Status) {
	domain := ""
	if ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName); err == nil && ni.Node() != nil {
		domain = ni.Node().Labels[d.Gang.TopologyKey]
	}
	dp, ok := d.Planned[domain]
	if !ok || dp.Room < d.Need {
		return nil, fwk.NewStatus(fwk.Error, msg.OutsideDeferredPlan)
	}
	c, outcome := pl.ledger.Pin(placement.PinRequest{Gang: d.Gang.Key, Owner: d.Gang.UID, Key: d.Gang.TopologyKey,
		Domain: domain, Reserved: d.Reserve[domain], Capacity: pl.planner.SnapshotCapacity(), Remaining: d.Need, SoleFit: len(d.Planned) < 2, MinMember: d.Gang.MinMember}, d.Gang, "")
	if outcome != placement.Pinned {
		return nil, fwk.NewStatus(fwk.Error, msg.DomainUnavailable)
	}
	metrics.CountPin(metrics.PinPinnedAfterFilter)
	pin := &plan.Pin{Gang: d.Gang, Domain: domain, ID: c.ID, SoleFit: c.SoleFit}
	cs.Write(plan.PinStateKey, pin)
	logger.V(4).Info("gangpack.pinGang.result", "pod", klog.KObj(pod), "gang", d.Gang.Key, "topologyKey", d.Gang.TopologyKey,
		"domain", domain, "source", metrics.PinPinnedAfterFilter, "need", d.Need, "remaining", c.Remaining, "candidates", len(dp.Candidates))
	return pin, nil
}
