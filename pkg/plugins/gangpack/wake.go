package gangpack

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// kube-scheduler 1.35 runs pod queueing hints only for assigned pods: the creation, deletion or
// relabelling of an unscheduled pod re-evaluates that pod alone. The plugin therefore follows
// gang members on the pod informer itself (watchMembers) for the transitions that concern
// siblings that wait for their gang:
//
//   - an unassigned member joins a gang waiting for its members (it may be gated, and a gated
//     pod never runs PreFilter to notice the gang is complete): the gang's representative is
//     woken once the gang has minMember live pods;
//   - a member that siblings wait behind (sibling or spread-anchor wait) is deleted, leaves the
//     gang or changes its labels: those waiters are woken;
//   - every event of a member drops its gang's cached representative (representative).
//
// Both wakes count as trigger templates_complete: the member set the waiters depend on changed.

// watchMembers follows gang members on the scheduler's pod informer.
func (pl *GangPack) watchMembers(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(gang.Changes(pl.memberEvent))
	return err
}

// memberEvent handles one pod informer event (old nil: added; cur nil: deleted). Its cost is
// O(1) except for an unassigned member joining a gang in the incomplete set (O(gang)).
func (pl *GangPack) memberEvent(old, cur *v1.Pod) {
	pl.noteNomination(old, cur)
	pl.paceNominated(old, cur)
	pl.checkLabels(old, cur)
	for _, p := range []*v1.Pod{old, cur} {
		if p != nil {
			if key, _, ok := gang.Of(p); ok {
				pl.ledger.MemberChanged(key)
			}
		}
	}
	if old != nil && (cur == nil || labelsChanged(old, cur)) {
		if waiters := pl.ledger.TakeAwaiting(old.Namespace, old.Name); len(waiters) > 0 {
			n := pl.ledger.Activate(pl.logger, metrics.TriggerTemplatesComplete, waiters)
			pl.logger.V(4).Info("gangpack.members.awaited_changed", "pod", klog.KObj(old), "deleted", cur == nil, "activated", n)
		}
	}
	if cur == nil || cur.Spec.NodeName != "" || !gang.Live(cur) {
		return
	}
	if key, name, ok := gang.Of(cur); ok && (old == nil || old.Labels[PodGroupLabel] != cur.Labels[PodGroupLabel]) {
		pl.wakeIncomplete(key, cur.Namespace, name)
	}
}

// labelsChanged reports whether the update changed the pod's labels in a way that can change
// which gang it belongs to or which sibling it waits for. The labels the binding itself adds
// (the placement labels on the Binding, the zone and region kube-apiserver's
// PodTopologyLabelsAdmission copies from the node) arrive in the update that sets
// spec.nodeName, and only as additions: they do not count, so a member's binding does not
// wake the siblings parked behind it a second time.
func labelsChanged(old, cur *v1.Pod) bool {
	if old.Spec.NodeName != "" || cur.Spec.NodeName == "" {
		return !maps.Equal(old.Labels, cur.Labels)
	}
	for k, v := range old.Labels {
		if w, ok := cur.Labels[k]; !ok || w != v {
			return true
		}
	}
	return false
}

// wakeIncomplete wakes the representative of a gang waiting for its members once the gang
// has as many live pods as its PodGroup's minMember: its planning finds the gang complete and
// wakes the other members (templates_complete). Fewer live pods cannot complete the gang, so
// a gang created pod by pod costs one member listing per creation and one wake-up.
func (pl *GangPack) wakeIncomplete(key, ns, name string) {
	if !pl.ledger.Incomplete(key) || pl.podGroups == nil {
		return
	}
	pg, err := pl.podGroups.Get(ns, name)
	if err != nil || pg == nil {
		return
	}
	pods, err := pl.members.List(ns, name)
	if err != nil {
		return
	}
	n := 0
	for _, p := range pods {
		if gang.Live(p) {
			n++
		}
	}
	if n < int(pg.Spec.MinMember) {
		return
	}
	rep := ledger.FirstUngated(pods)
	if rep == nil {
		return
	}
	pl.ledger.Activate(pl.logger, metrics.TriggerTemplatesComplete, []*v1.Pod{rep})
	pl.logger.V(4).Info("gangpack.members.joined_incomplete", "gang", key, "live", n, "activated", klog.KObj(rep))
}
