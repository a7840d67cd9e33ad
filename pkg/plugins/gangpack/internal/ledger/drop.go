package ledger

import (
	"k8s.io/klog/v2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Drop carries out a decision to drop a pin. Members of the attempt waiting at Permit are
// rejected (an unwind): a silent release would strand them under a dead attempt while a new
// one admits the rest. It reports whether members waited (the cycle then ends with the
// decision's message, and the gang re-plans on the next one).
func (l *Ledger) Drop(logger klog.Logger, c placement.Commitment, d gang.Drop) (waitersRejected bool) {
	if d.Stale != "" {
		metrics.CountPin(metrics.PinStaleReplan)
		logger.V(4).Info("gangpack.pinGang.stale_replan", "gang", c.Gang, "domain", c.Domain, "cause", d.Stale)
	}
	if d.NewKey != "" {
		metrics.CountPin(metrics.PinTopologyReplan)
		logger.V(4).Info("gangpack.pinGang.topology_replan", "gang", c.Gang, "oldKey", c.Key, "newKey", d.NewKey)
	}
	waiters := l.hasWaiters(c.Gang, c.ID)
	if waiters || d.Always {
		l.Unwind(logger, c.Gang, c.ID, d.Cause, false)
	} else {
		l.releaseSilently(logger, c.Gang, c.ID)
	}
	if d.ClearOwner {
		l.forgetFailed(c.Gang, c.Owner)
	}
	return waiters
}

// OnPodGroupChange wakes the live unbound members of a PodGroup that was added or changed. A
// gang whose minMember changed is unwound at once while its attempt is forming, or is
// committed with members still waiting at Permit (a placement-group partner waits for the
// rest of its group): those members were counted for the old size, none of them would run
// PreFilter again to notice, and the group's completion would admit them.
func (l *Ledger) OnPodGroupChange(old, cur *schedv1alpha1.PodGroup) {
	logger := l.logger
	key := cur.Namespace + "/" + cur.Name
	if old != nil && old.Spec.MinMember != cur.Spec.MinMember {
		if c, ok := l.store.Get(key); ok && c.MinMember != int(cur.Spec.MinMember) && (c.Forming() || l.hasWaiters(key, c.ID)) {
			l.Unwind(logger, key, c.ID, gang.CauseMinMemberChange, false)
		}
	}
	pods, err := l.members.LiveUnbound(cur.Namespace, cur.Name, "")
	if err != nil {
		logger.Error(err, "List gang members", "gang", cur.Namespace+"/"+cur.Name)
		return
	}
	l.Activate(logger, metrics.TriggerPodGroupChange, pods)
}
