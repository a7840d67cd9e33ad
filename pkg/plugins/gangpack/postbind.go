package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PostBind forgets the member's attempt record, drops it from the reservation-blocked set and
// from the pending gangs of the quality gauges.
func (pl *GangPack) PostBind(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	if pin := readPin(cs); pin != nil {
		pl.attempts.forgetIf(podKey(pod), pin.ID)
	} else {
		pl.attempts.forget(podKey(pod))
	}
	pl.blocked.remove(pod)
	pl.doubts.bound(pod.UID)
	pl.memberBound(pod)
}
