package ledger

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Waking pods: activation, the pods parked behind holds (ParkBlocked, wakeBlocked) or behind
// an unplaced sibling (Await, TakeAwaiting), gangs waiting for their members or partners,
// and the wake-ups of a gang's first Permit.

// Activate moves pods to the active queue and counts one activation per
// call with at least one pod. A replica that has not scheduled yet (a standby) stays silent.
// Never called with the store lock held.
func (l *Ledger) Activate(logger klog.Logger, trigger string, pods []*v1.Pod) int {
	if len(pods) == 0 || !l.active.Load() {
		return 0
	}
	m := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		m[p.Namespace+"/"+p.Name] = p
	}
	l.handle.Activate(logger, m)
	metrics.ActivationTotal.WithLabelValues(trigger).Inc()
	return len(m)
}

// activateGang wakes the gang's live unbound members, except the pod named except.
func (l *Ledger) activateGang(logger klog.Logger, trigger, ns, name, except string) int {
	pods, err := l.members.LiveUnbound(ns, name, except)
	if err != nil {
		logger.Error(err, "List gang members for activation", "gang", ns+"/"+name)
		return 0
	}
	return l.Activate(logger, trigger, pods)
}

// wakeForPermit is Permit's wake-up (trigger permit) of a member under attempt id: the pod
// itself (an attempt that unwinds while it waits then sends it straight back to the active
// queue), the siblings parked behind it (sibling and spread-anchor waits), and, on the first
// Permit of the attempt only, the gang's live unbound members that have not passed Reserve.
// Members already reserved or waiting are never woken by a sibling: for a pod in flight the
// queue keeps every activation as an event until the oldest in-flight pod is done, and a
// gang of N woken on every Permit kept about N²/2 of them.
func (l *Ledger) wakeForPermit(logger klog.Logger, pod *v1.Pod, gang gang.Info, id uint64) int {
	pods := append([]*v1.Pod{pod}, l.waits.take(pod.Namespace, pod.Name)...)
	if l.permitWoke.first(gang.Key, id) {
		others, err := l.members.LiveUnbound(gang.Namespace, gang.Name, pod.Name)
		if err != nil {
			logger.Error(err, "List gang members for activation", "gang", gang.Key)
		}
		for _, p := range others {
			if _, reserved := l.reserved.get(p.UID); !reserved {
				pods = append(pods, p)
			}
		}
	}
	return l.Activate(logger, metrics.TriggerPermit, pods)
}

// permitWakes records, per gang, the attempt whose first Permit woke the gang.
type permitWakes struct {
	mu sync.Mutex
	m  map[string]uint64
}

func newPermitWakes() *permitWakes { return &permitWakes{m: map[string]uint64{}} }

// first reports whether this is the first call for the gang's attempt id.
func (w *permitWakes) first(gang string, id uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if got, ok := w.m[gang]; ok && got == id {
		return false
	}
	w.m[gang] = id
	return true
}

// prune forgets the gangs keep rejects (GC: gangs without a live pod).
func (w *permitWakes) prune(keep func(gang string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g := range w.m {
		if !keep(g) {
			delete(w.m, g)
		}
	}
}

// wakeBlocked activates the reservation-blocked pods (trigger reservation_released): every
// standalone pod, every member of a gang that holds a pin, and one member per other gang (the
// first by name that is still a live unbound pod: a deleted representative would leave its
// siblings asleep). The other members of an unpinned gang stay in the set: the woken member
// either pins a domain, and then the first Permit of that attempt wakes its siblings, or
// meets the same hold and parks again. Waking whole gangs on every drain made every
// blocked member re-plan for nothing (a thundering herd with hundreds of gangs waiting).
func (l *Ledger) wakeBlocked(logger klog.Logger) {
	pods := l.blocked.drain()
	if len(pods) == 0 {
		return
	}
	first := map[string]*v1.Pod{}
	list := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		key, _, member := gang.Of(p)
		if !member {
			list = append(list, p)
			continue
		}
		if !l.members.Pending(p.Namespace, p.Name, p.UID) {
			continue
		}
		if l.store.Has(key) { // each member is needed, and the attempt's Permits woke the gang already
			list = append(list, p)
			continue
		}
		if cur, ok := first[key]; !ok || p.Name < cur.Name {
			first[key] = p
		}
	}
	for _, p := range pods {
		if key, _, member := gang.Of(p); member && first[key] != nil && first[key] != p {
			l.blocked.add(p)
		}
	}
	for _, p := range first {
		list = append(list, p)
	}
	l.Activate(logger, metrics.TriggerReservationReleased, list)
}

// Await parks waiter until awaited, an unplaced sibling it must follow, changes.
func (l *Ledger) Await(awaited, waiter *v1.Pod) { l.waits.add(awaited, waiter) }

// MembersMissing records that the gang waits for its members to exist.
func (l *Ledger) MembersMissing(key string) { l.incomplete.add(key) }

// MembersComplete records that every member of the gang exists; if it waited, its other
// members (but except) are woken and their number returned.
func (l *Ledger) MembersComplete(logger klog.Logger, info gang.Info, except, trigger string) (woken int, waited bool) {
	if !l.incomplete.remove(info.Key) {
		return 0, false
	}
	return l.activateGang(logger, trigger, info.Namespace, info.Name, except), true
}

// GroupWaits records why the placement group waits and returns the previous reason, if any.
func (l *Ledger) GroupWaits(group, why string) (prev string, had bool) {
	return l.groupsWaiting.set(group, why)
}

// GroupReady forgets that the group waited and reports whether it did.
func (l *Ledger) GroupReady(group string) bool { return l.groupsWaiting.remove(group) }

// MemberChanged forgets the gang's cached representative after an informer event of a member.
func (l *Ledger) MemberChanged(key string) { l.reps.invalidate(key) }

// TakeAwaiting returns, and forgets, the members parked behind the named unplaced sibling.
func (l *Ledger) TakeAwaiting(ns, name string) []*v1.Pod { return l.waits.take(ns, name) }

// ParkBlocked records a pod refused because of a hold, so the next hold lift wakes it.
// generation is the store's hold generation read before the decision to refuse: if a hold
// was lifted since (and its wake-up found the set without this pod), the pod is woken now.
func (l *Ledger) ParkBlocked(logger klog.Logger, pod *v1.Pod, generation uint64) {
	l.blocked.add(pod)
	if l.store.Generation() != generation {
		l.wakeBlocked(logger)
	}
}
