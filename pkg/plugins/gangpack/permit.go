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
// member that completes it admits every waiter of the same attempt. The ledger runs the
// protocol (ledger.Permit); the adapter keeps the pacer, the metrics and the partners'
// admission.
func (pl *GangPack) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	pin := plan.ReadPin(cs)
	if pin == nil {
		if _, _, member := gang.Of(pod); member {
			return fwk.NewStatus(fwk.Unschedulable, msg.NoPreFilterState), 0
		}
		pl.ledger.MarkAdmitted(pod.UID)
		pl.paceAdmitted(pod, nodeName)
		return nil, 0
	}
	if pin.Gang.Timeout <= 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.TimeoutNotConfigured), 0
	}
	logger := klog.FromContext(ctx)
	// A partner of a placement group binds only when every partner is committed too.
	admit := func() bool { return pl.groupCommitted(pin.Gang) }
	v := pl.ledger.Permit(logger, pod, pin.Gang, pin.ID, admit, pl.outsideDomain(pin))
	switch v.Outcome {
	case ledger.Reject:
		return fwk.NewStatus(fwk.Unschedulable, v.Msg), 0
	case ledger.Wait:
		metrics.GateTotal.WithLabelValues("wait").Inc()
		pl.paceWaiting(pod, nodeName)
		markWaited(cs, nodeName)
		return fwk.NewStatus(fwk.Wait), pin.Gang.Timeout
	}
	if pin.Gang.Group != nil {
		n := pl.admitPartners(pin.Gang)
		logger.V(4).Info("gangpack.group.admit", "pod", klog.KObj(pod), "group", pin.Gang.Group.Key, "partnerWaiters", n)
	}
	metrics.GateTotal.WithLabelValues("admit").Inc()
	pl.gangAdmitted(logger, cs, pod, pin, nodeName)
	pl.paceAdmitted(pod, nodeName)
	return nil, 0
}

// outsideDomain reports a node the node informer no longer shows in the pin's domain
// (relabelled or deleted since the cycle's snapshot); nil without a node lister. Permit asks
// it for the member completing the gang, which narrows the window of a relabel racing the
// gang's admission to the informer's delay.
func (pl *GangPack) outsideDomain(pin *plan.Pin) func(string) bool {
	if pl.nodes == nil || pin.Gang.TopologyKey == "" {
		return nil
	}
	return func(name string) bool {
		n, err := pl.nodes.Get(name)
		return err != nil || n.Labels[pin.Gang.TopologyKey] != pin.Domain
	}
}
