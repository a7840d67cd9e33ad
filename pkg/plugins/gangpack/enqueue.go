package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// EventsToRegister returns the plugin's event registrations with their hints. The PodGroup one is
// registered only when the resource was served at construction: kube-scheduler waits for
// every registered custom resource's watch to sync before it schedules anything.
func (pl *GangPack) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	nodeUpdates := fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint | fwk.UpdateNodeCondition | fwk.UpdateNodeLabel
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: podHint(false, pl.protectionEnded)},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: hintPodLabel},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodToleration}, QueueingHintFn: hintPodToleration},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown}, QueueingHintFn: podHint(true, pl.freesRoomFor)},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: nodeUpdates | fwk.Delete}, QueueingHintFn: pl.hintNodeChange},
	}
	if pl.dra != nil {
		events = append(events, draEvents()...)
	}
	if pl.registerPodGroupEvents {
		events = append(events, fwk.ClusterEventWithHint{
			Event:          fwk.ClusterEvent{Resource: podGroupResource, ActionType: fwk.Add | fwk.Update | fwk.Delete},
			QueueingHintFn: pl.hintPodGroup,
		})
	}
	return events, nil
}

// podHint is the shape of every pod queueing hint: Queue when the event's pod is the target
// itself (when self), a member of the target's gang, or when also says so; QueueSkip
// otherwise.
func podHint(self bool, also func(target, o, n *v1.Pod) bool) fwk.QueueingHintFn {
	return func(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		o, n, err := util.As[*v1.Pod](oldObj, newObj)
		if err != nil {
			return fwk.Queue, err
		}
		switch {
		case self && (samePod(target, o) || samePod(target, n)),
			inGangOf(target, o) || inGangOf(target, n),
			also != nil && also(target, o, n):
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	}
}

var (
	hintPodLabel      = podHint(true, nil)
	hintPodToleration = podHint(true, nil)
)

// freesRoomFor is the pod-deletion hint's condition beyond the target and its gang: a deleted
// pod frees room only if it was on a node, or nominated to one. Freed room is worth one retry
// per waiting gang, not one per member: a member of a gang without a pin is queued only when
// it is the gang's representative (representsGang); the representative's planning covers the
// whole gang, and when it pins, Permit wakes the rest. Bursts of hundreds of waiting gangs
// otherwise retry every member on every deletion, and the members of forming gangs wait
// behind those retries.
func (pl *GangPack) freesRoomFor(target, o, _ *v1.Pod) bool {
	return (o == nil || o.Spec.NodeName != "" || o.Status.NominatedNodeName != "") && pl.representsGang(target)
}

// protectionEnded is the assigned-pod-addition hint's condition beyond the target's gang: the
// pod bound is a standalone preemptor whose nominated node was protected, and the target is a
// gang member that stands for its gang (representsGang). While the preemptor was pending,
// the gang's planning set that node's room aside (a gang it refused for that reason parks
// as reservation-blocked, waiting for a hold to lift); the preemptor's binding ends the
// protection, and no store hold lifts then, so the event must requeue the gang: what is
// left may fit it, or let it preempt. kube-scheduler runs this hint for assigned pods only,
// which is where a protection ends (the preemptor's own scheduling moves it there).
func (pl *GangPack) protectionEnded(target, _, n *v1.Pod) bool {
	if n == nil || n.Spec.NodeName == "" || pl.evaluator == nil {
		return false
	}
	if _, _, member := gang.Of(n); member {
		return false
	}
	if _, _, member := gang.Of(target); !member {
		return false
	}
	return pl.evaluator.Protecting(n) && pl.representsGang(target)
}

// representsGang reports whether target stands for its gang in wake-ups on freed room: true
// for a standalone pod, a member of a gang that holds a pin, or the first (by name) of the
// gang's live, unbound members without scheduling gates; true whenever that cannot be told.
// The hint runs for every parked pod under the scheduling queue's lock, so the representative
// comes from a per-gang cache (ledger.Representative): O(1) per member, not O(gang).
func (pl *GangPack) representsGang(target *v1.Pod) bool {
	key, name, ok := gang.Of(target)
	if !ok {
		return true
	}
	if pl.ledger.Pinned(key) {
		return true
	}
	rep, ok := pl.ledger.Representative(target.Namespace, name, key)
	return !ok || rep == nil || samePod(rep, target)
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
	tk, _, ok := gang.Of(target)
	if !ok {
		return false
	}
	k, _, ok := gang.Of(p)
	return ok && k == tk
}

// hintKeys are the node label keys whose change can matter to the target: its gang's
// topology key (annotation or fallback) and, for a partner of a placement group, the group
// key; for a standalone pod, which this plugin only refuses on held nodes, the fallback key
// and every key a forming gang holds a domain under. nil means any change matters.
func (pl *GangPack) hintKeys(target *v1.Pod) []string {
	if _, name, ok := gang.Of(target); ok {
		var pg *schedv1alpha1.PodGroup
		if pl.podGroups != nil {
			pg, _ = pl.podGroups.Get(target.Namespace, name)
		}
		key := gang.TopologyKeyOf(pl.args, pg)
		if key == "" {
			return nil
		}
		if gk := gang.GroupKeyOf(pl.args, target, pg); gk != "" && gk != key {
			return []string{key, gk}
		}
		return []string{key}
	}
	if pl.args.TopologyKey == "" {
		return nil
	}
	return append(pl.ledger.HeldKeys(), pl.args.TopologyKey)
}

// nodeMatters reports whether any of the nodes carries one of the target's hint keys.
func (pl *GangPack) nodeMatters(target *v1.Pod, nodes ...*v1.Node) bool {
	keys := pl.hintKeys(target)
	if keys == nil {
		return true
	}
	for _, n := range nodes {
		for _, k := range keys {
			if n != nil && n.Labels[k] != "" {
				return true
			}
		}
	}
	return false
}

func (pl *GangPack) hintNodeChange(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, n, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if pl.nodeMatters(target, o, n) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func (pl *GangPack) hintPodGroup(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	_, name, member := gang.Of(target)
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
