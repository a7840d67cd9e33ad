package gangpack

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Permit is the all-or-nothing gate: members wait until the commitment drains, then the
// member that completes it admits every waiter of the same attempt.
func (pl *GangPack) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	pin := readPin(cs)
	if pin == nil {
		if _, _, member := gang.Of(pod); member {
			return fwk.NewStatus(fwk.Unschedulable, msg.NoPreFilterState), 0
		}
		pl.doubts.admit(pod.UID)
		return nil, 0
	}
	if pin.Gang.Timeout <= 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.TimeoutNotConfigured), 0
	}
	logger := klog.FromContext(ctx)
	// The attempt record comes first: an unwind from now on finds the pod by it, as a waiter
	// or, before the framework registers the waiter, through superviseWaiter.
	pl.attempts.set(gang.PodKey(pod), pin.ID, pl.now())
	owned, committed := pl.store.Committed(pin.Gang.Key, pin.ID)
	if !owned {
		pl.attempts.forgetIf(gang.PodKey(pod), pin.ID)
		return fwk.NewStatus(fwk.Unschedulable, msg.Unwound(pin.Gang.Key)), 0
	}
	pl.wakeForPermit(logger, pod, pin.Gang, pin.ID)
	// A partner of a placement group binds only when every partner is committed too.
	admit := func() bool { return pl.groupCommitted(pin.Gang) }
	if !committed || !admit() {
		metrics.GateTotal.WithLabelValues("wait").Inc()
		pl.spawn(func() { pl.superviseWaiter(pod, pin.Gang.Key, pin.ID, admit) })
		return fwk.NewStatus(fwk.Wait), pin.Gang.Timeout
	}
	if pl.waitEndsSoon(pin) {
		logger.V(4).Info("gangpack.Permit.deadline_guard", "pod", klog.KObj(pod), "gang", pin.Gang.Key, "margin", permitDeadlineMargin)
		// Unwound here, not only by this pod's Unreserve: the attempt is committed, and a
		// waiter's supervisor would otherwise admit it in between.
		pl.unreserved(logger, pin)
		return fwk.NewStatus(fwk.Unschedulable, msg.WaitEndsSoon(pin.Gang.Key)), 0
	}
	pl.forEachWaiter(pin.Gang.Key, pin.ID, func(wp fwk.WaitingPod) {
		pl.doubts.admit(wp.GetPod().UID)
		wp.Allow(Name)
	})
	if pin.Gang.Group != nil {
		n := pl.admitPartners(pin.Gang)
		logger.V(4).Info("gangpack.group.admit", "pod", klog.KObj(pod), "group", pin.Gang.Group.Key, "partnerWaiters", n)
	}
	pl.doubts.admit(pod.UID)
	metrics.GateTotal.WithLabelValues("admit").Inc()
	pl.gangAdmitted(logger, cs, pod, pin, nodeName)
	return nil, 0
}

// permitDeadlineMargin is how close to the end of a waiter's Permit wait the gang is no longer
// admitted (waitEndsSoon).
const permitDeadlineMargin = time.Second

// waitEndsSoon reports whether a member waiting under the pin's attempt reaches the end of its
// Permit wait within permitDeadlineMargin. kube-scheduler's timer rejects such a member on its
// own, possibly while the completing member allows the others, which would bind part of the
// gang; refusing the completing member instead unwinds the whole attempt (its Unreserve). The
// wait is measured from the waiter's Permit, a little before kube-scheduler starts its timer.
func (gs *gangs) waitEndsSoon(pin *pinState) bool {
	limit := gs.now().Add(permitDeadlineMargin - pin.Gang.Timeout)
	soon := false
	gs.forEachWaiter(pin.Gang.Key, pin.ID, func(wp fwk.WaitingPod) {
		if at, ok := gs.attempts.since(gang.PodKey(wp.GetPod()), pin.ID); ok && !at.After(limit) {
			soon = true
		}
	})
	return soon
}

// waiterRegistration bounds how long superviseWaiter looks for the framework's waiting pod.
const waiterRegistration = 30 * time.Second

// superviseWaiter closes the window between Permit returning Wait and the framework
// registering the waiting pod: an unwind in that window (a sibling's timeout or deletion, GC,
// an expired hold) cannot see the waiter, and the member would wait out its whole timeout
// under a dead attempt while its siblings re-plan without it. Once the waiter is registered,
// it is rejected if its attempt no longer owns the gang's pin, and admitted if the attempt
// committed meanwhile (and admit, a placement group's check, agrees). It stops as soon as the pod's attempt record changes (the pod bound or
// was unreserved).
func (gs *gangs) superviseWaiter(pod *v1.Pod, key string, id uint64, admit func() bool) {
	var wp fwk.WaitingPod
	// The plugin's context, not the cycle's: the framework cancels the cycle's context when
	// the scheduling cycle ends, possibly before this goroutine first runs.
	_ = wait.PollUntilContextTimeout(gs.ctx, time.Millisecond, waiterRegistration, true, func(context.Context) (bool, error) {
		if got, ok := gs.attempts.get(gang.PodKey(pod)); !ok || got != id {
			return true, nil
		}
		wp = gs.handle.GetWaitingPod(pod.UID)
		return wp != nil, nil
	})
	if wp == nil {
		return
	}
	switch owned, committed := gs.store.Committed(key, id); {
	case !owned:
		wp.Reject(Name, msg.Unwound(key))
		gs.logger.V(4).Info("gangpack.Permit.late_waiter_rejected", "pod", klog.KObj(pod), "key", key)
	case committed && admit():
		gs.doubts.admit(pod.UID)
		wp.Allow(Name)
	}
}
