package gang

import (
	"strconv"
	"time"

	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Interpret validates what the PodGroup (and the
// pod) say and returns the gang's facts, or the status that parks the pod.
func Interpret(args *Args, pod *v1.Pod, pg *schedv1alpha1.PodGroup) (Info, *fwk.Status) {
	name := pg.Name
	if pg.Spec.MinMember <= 0 {
		return Info{}, fwk.NewStatus(fwk.Unschedulable, msg.MinMember(pod.Namespace, name))
	}
	topologyKey := TopologyKeyOf(args, pg)
	if topologyKey == "" {
		if args.PodGroupTopologyKeyAnnotation == "" {
			return Info{}, fwk.NewStatus(fwk.Unschedulable, msg.TopologyNotConfigured)
		}
		return Info{}, fwk.NewStatus(fwk.Unschedulable, msg.MissingTopologyKey(pod.Namespace, name, args.PodGroupTopologyKeyAnnotation))
	}
	if !args.KeyAllowed(topologyKey) {
		return Info{}, fwk.NewStatus(fwk.Unschedulable, msg.KeyNotAllowed(pod.Namespace, name, topologyKey, args.AllowedTopologyKeys, args.TopologyKey))
	}
	if l := args.UnsupportedPlacementGroupLabel; l != "" {
		_, onPod := pod.Labels[l]
		_, onGroup := pg.Labels[l]
		if onPod || onGroup {
			return Info{}, fwk.NewStatus(fwk.Unschedulable, msg.PartnerGroups)
		}
	}
	timeout := EffectiveTimeout(pg.Spec.ScheduleTimeoutSeconds, args.DefaultPermitTimeoutSeconds)
	if timeout <= 0 {
		return Info{}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.TimeoutMissing(pod.Namespace, name))
	}
	group, st := InterpretGroup(args, pod, pg, topologyKey)
	if st != nil {
		return Info{}, st
	}
	return Info{
		Key: pod.Namespace + "/" + name, Namespace: pod.Namespace, Name: name, UID: string(pg.UID),
		MinMember: int(pg.Spec.MinMember), TopologyKey: topologyKey, Timeout: timeout, Group: group,
	}, nil
}

// TopologyKeyOf is the gang's topology key: the PodGroup's annotation when the scheduler
// reads one and it is set, else the fallback argument (possibly empty).
func TopologyKeyOf(args *Args, pg *schedv1alpha1.PodGroup) string {
	if a := args.PodGroupTopologyKeyAnnotation; a != "" && pg != nil && pg.Annotations[a] != "" {
		return pg.Annotations[a]
	}
	return args.TopologyKey
}

// MaxPermitWait is kube-scheduler's cap on every Permit wait: a waiter is rejected after at
// most this long, whatever timeout Permit returned.
const MaxPermitWait = 15 * time.Minute

// EffectiveTimeout is scheduleTimeoutSeconds when set and positive, else the default, capped
// at MaxPermitWait. The cap keeps the hold deadline, the Permit wait and the rest one length:
// an attempt that kube-scheduler's own Permit timer ends is then always at its deadline, so it
// expires and its domain rests, instead of re-reserving the same domain as an ordinary unwind.
func EffectiveTimeout(pgSeconds *int32, def *int64) time.Duration {
	var d time.Duration
	switch {
	case pgSeconds != nil && *pgSeconds > 0:
		d = time.Duration(*pgSeconds) * time.Second
	case def != nil && *def > 0:
		d = time.Duration(*def) * time.Second
	}
	return min(d, MaxPermitWait)
}

// Annotation suffixes appended to placementGroupLabel.
const (
	GroupSizeSuffix     = "-size"
	GroupTopologySuffix = "-topology-key"
	// MaxGroupSize bounds the partners of one group: the group planner tries every order of
	// partners that share nodes (n!), and a PodGroup is tenant input. Measured on 20
	// infeasible one-domain groups: 4 partners 9 ms, 6 partners 260 ms, 8 partners 26 s.
	MaxGroupSize = 4
)

// GroupNameOf returns the gang's group name: the label on the PodGroup, else on the pod. A
// nil pg (the PodGroup is gone) carries no label, so the pod's label names the group.
func GroupNameOf(args *Args, pod *v1.Pod, pg *schedv1alpha1.PodGroup) string {
	l := args.PlacementGroupLabel
	if l == "" {
		return ""
	}
	if pg != nil && pg.Labels[l] != "" {
		return pg.Labels[l]
	}
	if pod != nil {
		return pod.Labels[l]
	}
	return ""
}

// GroupKeyOf is the group key a partner's PodGroup names in its annotation; "" when the gang
// is not a partner or the group key is the gang's own.
func GroupKeyOf(args *Args, pod *v1.Pod, pg *schedv1alpha1.PodGroup) string {
	if pg == nil || GroupNameOf(args, pod, pg) == "" {
		return ""
	}
	return pg.Annotations[args.PlacementGroupLabel+GroupTopologySuffix]
}

// InterpretGroup reads the gang's placement group from its PodGroup; nil when the gang is
// not a partner. ownKey is the gang's topology key (the default group key).
func InterpretGroup(args *Args, pod *v1.Pod, pg *schedv1alpha1.PodGroup, ownKey string) (*GroupRef, *fwk.Status) {
	name := GroupNameOf(args, pod, pg)
	if name == "" {
		return nil, nil
	}
	g := &GroupRef{Key: pg.Namespace + "/" + name, Namespace: pg.Namespace, Name: name, TopologyKey: ownKey}
	sizeAnn := args.PlacementGroupLabel + GroupSizeSuffix
	size, err := strconv.Atoi(pg.Annotations[sizeAnn])
	if err != nil || size < 2 {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupSize(g.Key, sizeAnn))
	}
	if size > MaxGroupSize {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupSizeTooLarge(g.Key, sizeAnn, MaxGroupSize))
	}
	g.Size = size
	keyAnn := args.PlacementGroupLabel + GroupTopologySuffix
	if k := pg.Annotations[keyAnn]; k != "" {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupKeyInvalid(g.Key, keyAnn, k))
		}
		if !args.KeyAllowed(k) {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.KeyNotAllowed(pg.Namespace, pg.Name, k, args.AllowedTopologyKeys, args.TopologyKey))
		}
		g.TopologyKey, g.ExplicitKey = k, true
	}
	return g, nil
}
