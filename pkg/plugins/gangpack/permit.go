package gangpack

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Permit is the all-or-nothing gate: members wait until the commitment drains, then the
// member that completes it admits every waiter of the same attempt.
func (pl *GangPack) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	pin := plan.ReadPin(cs)
	if pin == nil {
		if _, _, member := gang.Of(pod); member {
			return fwk.NewStatus(fwk.Unschedulable, msg.NoPreFilterState), 0
		}
		pl.ledger.Admitted(pod.UID)
		pl.paceAdmitted(pod, nodeName)
		return nil, 0
	}
	if pin.Gang.Timeout <= 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.TimeoutNotConfigured), 0
	}
	logger := klog.FromContext(ctx)
	// The attempt record comes first: an unwind from now on finds the pod by it, as a waiter
	// or, before the framework registers the waiter, through superviseWaiter.
	owned, committed := pl.ledger.EnterPermit(pod, pin.Gang.Key, pin.ID)
	if !owned {
		return fwk.NewStatus(fwk.Unschedulable, msg.Unwound(pin.Gang.Key)), 0
	}
	pl.ledger.WakeForPermit(logger, pod, pin.Gang, pin.ID)
	// A partner of a placement group binds only when every partner is committed too.
	admit := func() bool { return pl.groupCommitted(pin.Gang) }
	if !committed || !admit() {
		metrics.GateTotal.WithLabelValues("wait").Inc()
		pl.paceWaiting(pod, nodeName)
		markWaited(cs, nodeName)
		pl.ledger.Supervise(pod, pin.Gang.Key, pin.ID, admit)
		return fwk.NewStatus(fwk.Wait), pin.Gang.Timeout
	}
	if pl.ledger.WaitEndsSoon(pin.Gang, pin.ID) {
		logger.V(4).Info("gangpack.Permit.deadline_guard", "pod", klog.KObj(pod), "gang", pin.Gang.Key, "margin", ledger.PermitDeadlineMargin)
		// Unwound here, not only by this pod's Unreserve: the attempt is committed, and a
		// waiter's supervisor would otherwise admit it in between.
		pl.ledger.Unreserved(logger, pin.Gang, pin.ID)
		return fwk.NewStatus(fwk.Unschedulable, msg.WaitEndsSoon(pin.Gang.Key)), 0
	}
	pl.ledger.AdmitAttempt(pod, pin.Gang.Key, pin.ID)
	if pin.Gang.Group != nil {
		n := pl.admitPartners(pin.Gang)
		logger.V(4).Info("gangpack.group.admit", "pod", klog.KObj(pod), "group", pin.Gang.Group.Key, "partnerWaiters", n)
	}
	metrics.GateTotal.WithLabelValues("admit").Inc()
	pl.gangAdmitted(logger, cs, pod, pin, nodeName)
	pl.paceAdmitted(pod, nodeName)
	return nil, 0
}
