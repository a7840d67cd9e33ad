package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// What the extension points tell the ledger about one member's way through a scheduling
// cycle (Reserve, Unreserve, PostBind), and what they read from it. Permit's verbs are in
// admit.go; PreFilter's decisions carried out are in pins.go and drop.go.

// StartCycle is every PreFilter's first call: it marks the ledger active (only an active, leading
// replica activates pods) and returns the hold generation the cycle's decisions are made under.
func (l *Ledger) StartCycle() uint64 {
	l.active.Store(true)
	return l.store.Generation()
}

// Commitment returns the gang's pin.
func (l *Ledger) Commitment(key string) (placement.Commitment, bool) { return l.store.Get(key) }

// Pinned reports whether the gang has a pin.
func (l *Ledger) Pinned(key string) bool { return l.store.Has(key) }

// Forming reports whether the gang has a pin that is still forming (not committed).
func (l *Ledger) Forming(key string) bool { return l.store.Forming(key) }

// Pins lists every pin.
func (l *Ledger) Pins() []placement.Commitment { return l.store.List() }

// Generation is the store's hold generation: it changes whenever room is given back.
func (l *Ledger) Generation() uint64 { return l.store.Generation() }

// ReservedOn is the room other forming gangs (all but except) reserve on the node.
func (l *Ledger) ReservedOn(node, except string) placement.Reserved {
	return l.store.ReservedOn(node, except)
}

// ReservedExcept is the room every forming gang but except reserves, by node.
func (l *Ledger) ReservedExcept(except string) map[string]placement.Reserved {
	return l.store.ReservedExcept(except)
}

// HeldKeys are the topology keys of the domains forming gangs hold.
func (l *Ledger) HeldKeys() []string { return l.store.HeldKeys() }

// DoubtBlocks reports whether the node is avoided because of a binding in doubt.
func (l *Ledger) DoubtBlocks(node string, uid types.UID, now time.Time) bool {
	return l.doubts.blocks(node, uid, now)
}

// Incomplete reports whether the gang waits for its members to exist.
func (l *Ledger) Incomplete(key string) bool { return l.incomplete.has(key) }

// MemberReserved records the node a gang member was reserved on (until it binds); a member
// placed again is no preemption victim any more.
func (l *Ledger) MemberReserved(pod *v1.Pod, node string) { l.reserved.set(pod, node) }

// Drain takes the member's slot of the attempt's commitment; the drain that commits the gang
// lifts its hold and forgets its failed domains. Room given back (the hold lifted, or a slot
// of another node consumed) wakes the pods it refused. It reports whether the gang committed.
func (l *Ledger) Drain(logger klog.Logger, info gang.Info, id uint64, node string) bool {
	r := l.store.Drain(info.Key, id, node)
	if r.Committed {
		l.holdEnded(id)
		l.forgetFailed(info.Key, info.UID)
	}
	if r.GaveBack {
		l.wakeBlocked(logger)
	}
	return r.Committed
}

// MemberUnreserved forgets the member's attempt and node and, when the pod failed in binding
// after Permit admitted it, puts its node in doubt; it reports whether it did.
func (l *Ledger) MemberUnreserved(pod *v1.Pod, node string) bool {
	l.attempts.forget(gang.PodKey(pod))
	l.reserved.forget(pod.UID)
	if l.doubts.unreserved(pod.UID, node, time.Now()) {
		l.doubtBegan(pod.UID)
		return true
	}
	return false
}

// MemberBound forgets the bound member's attempt record (of attempt id only, when pinned),
// its reservation-blocked entry and its doubt.
func (l *Ledger) MemberBound(pod *v1.Pod, id uint64, pinned bool) {
	if pinned {
		l.attempts.forgetIf(gang.PodKey(pod), id)
	} else {
		l.attempts.forget(gang.PodKey(pod))
	}
	l.blocked.remove(pod)
	l.doubts.bound(pod.UID)
}

// Abandon unwinds whatever pin the gang has and forgets its failed domains: its PodGroup is
// gone (cause), or GC found the gang dead or re-created.
func (l *Ledger) Abandon(logger klog.Logger, key string, id uint64, cause string) {
	l.Unwind(logger, key, id, cause, false)
	l.forgetFailed(key, "")
}

// MemberChanged forgets the gang's cached representative after an informer event of a member.
func (l *Ledger) MemberChanged(key string) { l.reps.invalidate(key) }

// TakeAwaiting returns, and forgets, the members parked behind the named unplaced sibling.
func (l *Ledger) TakeAwaiting(ns, name string) []*v1.Pod { return l.waits.take(ns, name) }

// Prune is GC's part of the ledger: it forgets what belongs to gangs no longer live
// (liveGangs) and to pods no longer pending.
func (l *Ledger) Prune(logger klog.Logger, liveGangs map[string]struct{}) {
	isLive := func(k string) bool { _, ok := liveGangs[k]; return ok }
	for _, k := range l.incomplete.keys() {
		if !isLive(k) {
			l.incomplete.remove(k)
		}
	}
	l.reps.prune(isLive)
	l.permitWoke.prune(isLive)
	l.waits.prune(l.members.Pending)
	for _, k := range l.failed.Gangs() {
		if !isLive(k) {
			l.forgetFailed(k, "")
		}
	}
	for _, p := range l.blocked.snapshot() {
		if !l.members.Pending(p.Namespace, p.Name, p.UID) {
			l.blocked.remove(p)
		}
	}
	if l.doubts.prune(time.Now()) {
		l.wakeBlocked(logger)
	}
	l.reserved.prune(l.members.Pending)
}

// Now is the ledger's clock.
func (l *Ledger) Now() time.Time { return l.now() }

// Go runs f on a goroutine of its own (tests run it at a point of their choosing).
func (l *Ledger) Go(f func()) { l.spawn(f) }
