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
// gang (its PodGroup and what it says) and plans it.
func (pl *GangPack) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	pl.paceLoop(ctx, pod)
	cs.Write(requestStateKey, &requestState{request: gang.Request(pod), generation: pl.ledger.Begin()})
	logger := klog.FromContext(ctx)
	// The first PreFilter of a new leader pins the gangs the previous one left forming
	// (resume.go), before this pod, gang member or not, is planned or filtered.
	pl.resumeNominated(logger, nodes)
	key, name, ok := gang.Of(pod)
	if !ok { // standalone pods pass; Filter still applies the hold barrier
		return nil, nil
	}
	if pl.podGroups == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.ReaderUnavailable)
	}
	pg, err := pl.podGroups.get(pod.Namespace, name)
	if err != nil || pg == nil {
		pl.ledger.Abandon(logger, key, placement.AnyID, gang.CausePodGroupMissing)
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.NotResolvable(pod.Namespace, name))
	}
	info, st := gang.Interpret(pl.args, pod, pg)
	if st != nil {
		return nil, st
	}
	return pl.planner.Plan(ctx, logger, cs, pod, info, nodes)
}

// PreFilterExtensions returns nil: no incremental AddPod/RemovePod.
func (pl *GangPack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
