package gangpack

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// PreFilter validates the gang (its PodGroup and what it says) and then plans it.
func (pl *GangPack) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	pl.ledger.MarkActive()
	cs.Write(requestStateKey, &requestState{request: gang.Request(pod), generation: pl.ledger.Generation()})
	key, name, ok := gang.Of(pod)
	if !ok { // standalone pods pass; Filter still applies the hold barrier
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	if pl.podGroups == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.ReaderUnavailable)
	}
	pg, err := pl.podGroups.get(pod.Namespace, name)
	if err != nil || pg == nil {
		pl.ledger.Abandon(logger, key, placement.AnyID, ledger.CausePodGroupMissing)
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.NotResolvable(pod.Namespace, name))
	}
	info, st := interpretPodGroup(pl.args, pod, pg)
	if st != nil {
		return nil, st
	}
	return pl.plan(ctx, logger, cs, pod, info, nodes)
}

// interpretPodGroup validates what the PodGroup (and the
// pod) say and returns the gang's facts, or the status that parks the pod.
func interpretPodGroup(args *Args, pod *v1.Pod, pg *schedv1alpha1.PodGroup) (gang.Info, *fwk.Status) {
	name := pg.Name
	if pg.Spec.MinMember <= 0 {
		return gang.Info{}, fwk.NewStatus(fwk.Unschedulable, msg.MinMember(pod.Namespace, name))
	}
	topologyKey := topologyKeyOf(args, pg)
	if topologyKey == "" {
		if args.PodGroupTopologyKeyAnnotation == "" {
			return gang.Info{}, fwk.NewStatus(fwk.Unschedulable, msg.TopologyNotConfigured)
		}
		return gang.Info{}, fwk.NewStatus(fwk.Unschedulable, msg.MissingTopologyKey(pod.Namespace, name, args.PodGroupTopologyKeyAnnotation))
	}
	if !args.KeyAllowed(topologyKey) {
		return gang.Info{}, fwk.NewStatus(fwk.Unschedulable, msg.KeyNotAllowed(pod.Namespace, name, topologyKey, args.AllowedTopologyKeys, args.TopologyKey))
	}
	if l := args.UnsupportedPlacementGroupLabel; l != "" {
		_, onPod := pod.Labels[l]
		_, onGroup := pg.Labels[l]
		if onPod || onGroup {
			return gang.Info{}, fwk.NewStatus(fwk.Unschedulable, msg.PartnerGroups)
		}
	}
	timeout := effectiveTimeout(pg.Spec.ScheduleTimeoutSeconds, args.DefaultPermitTimeoutSeconds)
	if timeout <= 0 {
		return gang.Info{}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.TimeoutMissing(pod.Namespace, name))
	}
	group, st := interpretGroup(args, pod, pg, topologyKey)
	if st != nil {
		return gang.Info{}, st
	}
	return gang.Info{
		Key: pod.Namespace + "/" + name, Namespace: pod.Namespace, Name: name, UID: string(pg.UID),
		MinMember: int(pg.Spec.MinMember), TopologyKey: topologyKey, Timeout: timeout, Group: group,
	}, nil
}

// topologyKeyOf is the gang's topology key: the PodGroup's annotation when the scheduler
// reads one and it is set, else the fallback argument (possibly empty).
func topologyKeyOf(args *Args, pg *schedv1alpha1.PodGroup) string {
	if a := args.PodGroupTopologyKeyAnnotation; a != "" && pg != nil && pg.Annotations[a] != "" {
		return pg.Annotations[a]
	}
	return args.TopologyKey
}

// maxPermitWait is kube-scheduler's cap on every Permit wait: a waiter is rejected after at
// most this long, whatever timeout Permit returned.
const maxPermitWait = 15 * time.Minute

// effectiveTimeout is scheduleTimeoutSeconds when set and positive, else the default, capped
// at maxPermitWait. The cap keeps the hold deadline, the Permit wait and the rest one length:
// an attempt that kube-scheduler's own Permit timer ends is then always at its deadline, so it
// expires and its domain rests, instead of re-reserving the same domain as an ordinary unwind.
func effectiveTimeout(pgSeconds *int32, def *int64) time.Duration {
	var d time.Duration
	switch {
	case pgSeconds != nil && *pgSeconds > 0:
		d = time.Duration(*pgSeconds) * time.Second
	case def != nil && *def > 0:
		d = time.Duration(*def) * time.Second
	}
	return min(d, maxPermitWait)
}

// PreFilterExtensions returns nil: no incremental AddPod/RemovePod.
func (pl *GangPack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
