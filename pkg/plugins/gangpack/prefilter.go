package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// PreFilter waits for the bind window when it starts new work (pace.go), then validates the
// gang (its PodGroup and what it says) and plans it. After a wait the cycle goes on with the
// nodes the wait did not change only (the snapshot was taken before it).
func (pl *GangPack) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	fresh := pl.paceLoop(ctx, pod, nodes)
	rs := &requestState{request: gang.Request(pod), generation: pl.ledger.StartCycle()}
	if pl.dra != nil && len(pod.Spec.ResourceClaims) > 0 {
		rs.dev = &podDevices{}
	}
	cs.Write(requestStateKey, rs)
	logger := klog.FromContext(ctx)
	// The first PreFilter of a new leader pins the gangs the previous one left forming
	// (resume.go), before this pod, gang member or not, is planned or filtered.
	pl.resumeNominated(logger, nodes)
	if fresh != nil && len(fresh.NodeNames) == 0 {
		return fresh, fwk.NewStatus(fwk.Unschedulable, msg.NodesChanged)
	}
	key, name, ok := gang.Of(pod)
	if !ok { // standalone pods pass; Filter still applies the hold barrier
		return fresh, nil
	}
	if pl.podGroups == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.ReaderUnavailable)
	}
	pg, err := pl.podGroups.Get(pod.Namespace, name)
	if err != nil || pg == nil {
		pl.ledger.Abandon(logger, key, placement.AnyID, gang.CausePodGroupMissing)
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.NotResolvable(pod.Namespace, name))
	}
	info, st := gang.Interpret(pl.args, pod, pg)
	if st != nil {
		return nil, st
	}
	if fresh == nil { // no wait: the planner's result as it is (Merge would copy it)
		return pl.planner.Plan(ctx, logger, cs, pod, info, nodes)
	}
	res, st := pl.planner.Plan(ctx, logger, cs, pod, info, keepNodes(nodes, fresh))
	return fresh.Merge(res), st
}

// PreFilterExtensions returns nil: no incremental AddPod/RemovePod.
func (pl *GangPack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
