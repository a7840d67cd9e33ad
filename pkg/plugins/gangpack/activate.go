package gangpack

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// activate moves pods to the active queue and counts one activation per
// call with at least one pod. A replica that has not scheduled yet (a standby) stays silent.
// Never called with the store lock held.
func (gs *gangs) activate(logger klog.Logger, trigger string, pods []*v1.Pod) int {
	if len(pods) == 0 || !gs.active.Load() {
		return 0
	}
	m := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		m[p.Namespace+"/"+p.Name] = p
	}
	gs.handle.Activate(logger, m)
	activationTotal.WithLabelValues(trigger).Inc()
	return len(m)
}

// activateGang wakes the gang's live unbound members, except the pod named except.
func (gs *gangs) activateGang(logger klog.Logger, trigger, ns, name, except string) int {
	pods, err := gs.members.liveUnbound(ns, name, except)
	if err != nil {
		logger.Error(err, "List gang members for activation", "gang", ns+"/"+name)
		return 0
	}
	return gs.activate(logger, trigger, pods)
}

// wakeBlocked activates the reservation-blocked pods (trigger reservation_released): every
// standalone pod, and one member per gang (the first by name that is still a live unbound pod:
// a deleted representative would leave its siblings asleep). The other members of a gang stay
// in the set: the woken member either pins a domain, and then its Permit activation wakes its
// siblings, or meets the same hold and parks again. Waking whole gangs on every drain made every
// blocked member re-plan for nothing (a thundering herd with hundreds of gangs waiting).
func (gs *gangs) wakeBlocked(logger klog.Logger) {
	pods := gs.blocked.drain()
	if len(pods) == 0 {
		return
	}
	first := map[string]*v1.Pod{}
	list := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		key, _, member := gangOf(p)
		if !member {
			list = append(list, p)
			continue
		}
		if !gs.members.pending(p.Namespace, p.Name, p.UID) {
			continue
		}
		if cur, ok := first[key]; !ok || p.Name < cur.Name {
			first[key] = p
		}
	}
	for _, p := range pods {
		if key, _, member := gangOf(p); member && first[key] != nil && first[key] != p {
			gs.blocked.add(p)
		}
	}
	for _, p := range first {
		list = append(list, p)
	}
	gs.activate(logger, triggerReservationReleased, list)
}
