package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// PostBind forgets the member's attempt record, drops it from the reservation-blocked set and
// from the pending gangs of the quality gauges.
func (pl *GangPack) PostBind(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	if pin := readPin(cs); pin != nil {
		pl.attempts.forgetIf(gang.PodKey(pod), pin.ID)
	} else {
		pl.attempts.forget(gang.PodKey(pod))
	}
	pl.blocked.remove(pod)
	pl.doubts.bound(pod.UID)
	pl.memberBound(pod)
}
