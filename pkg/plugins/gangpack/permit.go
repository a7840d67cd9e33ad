package gangpack

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Permit is the all-or-nothing gate (placement.md §9): members wait until the commitment
// drains, then the member that completes it admits every waiter of the same attempt.
func (pl *GangPack) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	pin := readPin(cs)
	if pin == nil {
		if _, _, member := gangOf(pod); member {
			return fwk.NewStatus(fwk.Unschedulable, msgNoPreFilterState), 0
		}
		return nil, 0
	}
	if pin.Gang.Timeout <= 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgTimeoutNotConfigured), 0
	}
	owned, committed := pl.store.Committed(pin.Gang.Key, pin.ID)
	if !owned {
		return fwk.NewStatus(fwk.Unschedulable, msgUnwound(pin.Gang.Key)), 0
	}
	logger := klog.FromContext(ctx)
	pl.attempts.set(podKey(pod), pin.ID)
	pl.activateGang(logger, triggerPermit, pin.Gang.Namespace, pin.Gang.Name, "")
	if !committed {
		gateTotal.WithLabelValues("wait").Inc()
		return fwk.NewStatus(fwk.Wait), pin.Gang.Timeout
	}
	if pl.handle != nil {
		pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
			p := wp.GetPod()
			if key, _, ok := gangOf(p); !ok || key != pin.Gang.Key {
				return
			}
			if id, ok := pl.attempts.get(podKey(p)); ok && id == pin.ID {
				wp.Allow(Name)
			}
		})
	}
	gateTotal.WithLabelValues("admit").Inc()
	pl.gangAdmitted(logger, cs, pod, pin, nodeName)
	return nil, 0
}

// PostBind forgets the member's attempt record and drops it from the reservation-blocked set.
func (pl *GangPack) PostBind(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	if pin := readPin(cs); pin != nil {
		pl.attempts.forgetIf(podKey(pod), pin.ID)
	} else {
		pl.attempts.forget(podKey(pod))
	}
	pl.blocked.remove(pod)
	pl.memberBound(pod)
}
