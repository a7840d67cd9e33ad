package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// EventsToRegister returns the seven registrations of placement.md §14. The PodGroup one is
// registered only when the resource was served at construction: kube-scheduler waits for
// every registered custom resource's watch to sync before it schedules anything.
func (pl *GangPack) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	nodeUpdates := fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint | fwk.UpdateNodeCondition | fwk.UpdateNodeLabel
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: pl.hintPodAdd},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: pl.hintPodLabel},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodToleration}, QueueingHintFn: pl.hintPodToleration},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown}, QueueingHintFn: pl.hintPodDelete},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: nodeUpdates}, QueueingHintFn: pl.hintNodeChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Delete}, QueueingHintFn: pl.hintNodeDelete},
	}
	if pl.registerPodGroupEvents {
		events = append(events, fwk.ClusterEventWithHint{
			Event:          fwk.ClusterEvent{Resource: podGroupResource, ActionType: fwk.Add | fwk.Update | fwk.Delete},
			QueueingHintFn: pl.hintPodGroup,
		})
	}
	return events, nil
}

// asPod converts a hint object to a pod; nil for nil or other types.
func asPod(obj any) (*v1.Pod, bool) {
	switch o := obj.(type) {
	case nil:
		return nil, true
	case *v1.Pod:
		return o, true
	case cache.DeletedFinalStateUnknown:
		return asPod(o.Obj)
	}
	return nil, false
}

func samePod(a, b *v1.Pod) bool {
	if a == nil || b == nil {
		return false
	}
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	return a.Namespace == b.Namespace && a.Name == b.Name
}

// inGangOf reports whether p is in target's gang (target must be a member).
func inGangOf(target, p *v1.Pod) bool {
	if p == nil {
		return false
	}
	tk, _, ok := gangOf(target)
	if !ok {
		return false
	}
	k, _, ok := gangOf(p)
	return ok && k == tk
}

func (pl *GangPack) hintPodAdd(_ klog.Logger, target *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	p, ok := asPod(newObj)
	if !ok {
		return fwk.Queue, nil
	}
	if inGangOf(target, p) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintPodLabel(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, ok1 := asPod(oldObj)
	n, ok2 := asPod(newObj)
	if !ok1 || !ok2 {
		return fwk.Queue, nil
	}
	if samePod(target, n) || samePod(target, o) {
		return fwk.Queue, nil
	}
	if inGangOf(target, o) || inGangOf(target, n) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintPodToleration(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, ok1 := asPod(oldObj)
	n, ok2 := asPod(newObj)
	if !ok1 || !ok2 {
		return fwk.Queue, nil
	}
	if samePod(target, n) || inGangOf(target, n) || inGangOf(target, o) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintPodDelete(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, ok1 := asPod(oldObj)
	n, ok2 := asPod(newObj)
	if !ok1 || !ok2 {
		return fwk.Queue, nil
	}
	if samePod(target, o) || samePod(target, n) {
		return fwk.Queue, nil
	}
	if inGangOf(target, o) || inGangOf(target, n) {
		return fwk.Queue, nil
	}
	if o != nil && o.Spec.NodeName == "" && o.Status.NominatedNodeName == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// targetKey is the topology key relevant to a target pod: its gang's key when the PodGroup
// resolves, else the fallback argument.
func (pl *GangPack) targetKey(target *v1.Pod) string {
	if _, name, ok := gangOf(target); ok && pl.podGroups != nil {
		if pg, err := pl.podGroups.get(target.Namespace, name); err == nil && pg != nil {
			if a := pl.args.PodGroupTopologyKeyAnnotation; a != "" && pg.Annotations[a] != "" {
				return pg.Annotations[a]
			}
		}
	}
	return pl.args.TopologyKey
}

func asNode(obj any) (*v1.Node, bool) {
	switch o := obj.(type) {
	case nil:
		return nil, true
	case *v1.Node:
		return o, true
	case cache.DeletedFinalStateUnknown:
		return asNode(o.Obj)
	}
	return nil, false
}

func hasKey(n *v1.Node, key string) bool { return n != nil && n.Labels[key] != "" }

func (pl *GangPack) hintNodeChange(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, ok1 := asNode(oldObj)
	n, ok2 := asNode(newObj)
	if !ok1 || !ok2 {
		return fwk.Queue, nil
	}
	key := pl.targetKey(target)
	if key == "" || hasKey(o, key) || hasKey(n, key) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintNodeDelete(_ klog.Logger, target *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	o, ok := asNode(oldObj)
	if !ok {
		return fwk.Queue, nil
	}
	key := pl.targetKey(target)
	if key == "" || hasKey(o, key) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintPodGroup(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	_, name, member := gangOf(target)
	if !member {
		return fwk.QueueSkip, nil
	}
	obj := newObj
	if obj == nil {
		obj = oldObj
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var ns, n string
	switch pg := obj.(type) {
	case *schedv1alpha1.PodGroup:
		ns, n = pg.Namespace, pg.Name
	case interface {
		GetNamespace() string
		GetName() string
	}:
		ns, n = pg.GetNamespace(), pg.GetName()
	default:
		return fwk.Queue, nil
	}
	if ns == target.Namespace && n == name {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
