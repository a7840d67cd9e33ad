package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// PostBind ends the pod's binding for the bind window (pace.go), forgets the member's attempt
// record, drops it from the reservation-blocked set and from the pending gangs of the quality
// gauges.
func (pl *GangPack) PostBind(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	pl.paceFinished(pod, true)
	if pin := plan.ReadPin(cs); pin != nil {
		pl.ledger.MemberBound(pod, pin.ID, true)
	} else {
		pl.ledger.MemberBound(pod, 0, false)
	}
	pl.memberBound(pod)
}

// memberBound is the PostBind hook: a gang whose member binds is no longer pending.
func (pl *GangPack) memberBound(pod *v1.Pod) {
	if key, _, ok := gang.Of(pod); ok {
		pl.quality.Bound(key)
	}
}
