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

// MarkActive is the first PreFilter's: only an active (leading) replica activates pods.
func (gs *Ledger) MarkActive() { gs.active.Store(true) }

// Commitment returns the gang's pin.
func (gs *Ledger) Commitment(key string) (placement.Commitment, bool) { return gs.store.Get(key) }

// Pinned reports whether the gang has a pin.
func (gs *Ledger) Pinned(key string) bool { return gs.store.Has(key) }

// Pins lists every pin.
func (gs *Ledger) Pins() []placement.Commitment { return gs.store.List() }

// Generation is the store's hold generation: it changes whenever room is given back.
func (gs *Ledger) Generation() uint64 { return gs.store.Generation() }

// ReservedOn is the room other forming gangs (all but except) reserve on the node.
func (gs *Ledger) ReservedOn(node, except string) placement.Reserved {
	return gs.store.ReservedOn(node, except)
}

// ReservedExcept is the room every forming gang but except reserves, by node.
func (gs *Ledger) ReservedExcept(except string) map[string]placement.Reserved {
	return gs.store.ReservedExcept(except)
}

// HeldKeys are the topology keys of the domains forming gangs hold.
func (gs *Ledger) HeldKeys() []string { return gs.store.HeldKeys() }

// HeldDomainRefs are the domains forming gangs hold.
func (gs *Ledger) HeldDomainRefs() []placement.DomainRef { return gs.store.HeldDomainRefs() }

// DoubtBlocks reports whether the node is avoided because of a binding in doubt.
func (gs *Ledger) DoubtBlocks(node string, uid types.UID, now time.Time) bool {
	return gs.doubts.blocks(node, uid, now)
}

// Incomplete reports whether the gang waits for its members to exist.
func (gs *Ledger) Incomplete(key string) bool { return gs.incomplete.has(key) }

// MemberReserved records the node a gang member was reserved on (until it binds); a member
// placed again is no preemption victim any more.
func (gs *Ledger) MemberReserved(pod *v1.Pod, node string) { gs.reserved.set(pod, node) }

// Drain takes the member's slot of the attempt's commitment; the drain that commits the gang
// lifts its hold and forgets its failed domains. Room given back (the hold lifted, or a slot
// of another node consumed) wakes the pods it refused. It reports whether the gang committed.
func (gs *Ledger) Drain(logger klog.Logger, info gang.Info, id uint64, node string) bool {
	r := gs.store.Drain(info.Key, id, node)
	if r.Committed {
		gs.holdEnded(id)
		gs.forgetFailed(info.Key, info.UID)
	}
	if r.GaveBack {
		gs.wakeBlocked(logger)
	}
	return r.Committed
}

// Unreserved is Unreserve's unwind of a member's attempt (see unwindOnUnreserve).
func (gs *Ledger) Unreserved(logger klog.Logger, info gang.Info, id uint64) {
	gs.unwindOnUnreserve(logger, info, id)
}

// MemberUnreserved forgets the member's attempt and node and, when the pod failed in binding
// after Permit admitted it, puts its node in doubt; it reports whether it did.
func (gs *Ledger) MemberUnreserved(pod *v1.Pod, node string) bool {
	gs.attempts.forget(gang.PodKey(pod))
	gs.reserved.forget(pod.UID)
	if gs.doubts.unreserved(pod.UID, node, time.Now()) {
		gs.doubtBegan(pod.UID)
		return true
	}
	return false
}

// MemberBound forgets the bound member's attempt record (of attempt id only, when pinned),
// its reservation-blocked entry and its doubt.
func (gs *Ledger) MemberBound(pod *v1.Pod, id uint64, pinned bool) {
	if pinned {
		gs.attempts.forgetIf(gang.PodKey(pod), id)
	} else {
		gs.attempts.forget(gang.PodKey(pod))
	}
	gs.blocked.remove(pod)
	gs.doubts.bound(pod.UID)
}

// Unwind drops the gang's pin if attempt id owns it (placement.AnyID: whatever the owner),
// optionally marking its domain failed, and rejects the attempt's waiters.
func (gs *Ledger) Unwind(logger klog.Logger, key string, id uint64, cause string, markFailed bool) UnwindResult {
	return gs.unwind(logger, key, id, cause, markFailed)
}

// Abandon unwinds whatever pin the gang has and forgets its failed domains: its PodGroup is
// gone (cause), or GC found the gang dead or re-created.
func (gs *Ledger) Abandon(logger klog.Logger, key string, id uint64, cause string) {
	gs.unwind(logger, key, id, cause, false)
	gs.forgetFailed(key, "")
}

// ParkBlocked: see parkBlocked.
func (gs *Ledger) ParkBlocked(logger klog.Logger, pod *v1.Pod, generation uint64) {
	gs.parkBlocked(logger, pod, generation)
}

// Activate moves pods to the active queue (see activate).
func (gs *Ledger) Activate(logger klog.Logger, trigger string, pods []*v1.Pod) int {
	return gs.activate(logger, trigger, pods)
}

// MemberChanged forgets the gang's cached representative after an informer event of a member.
func (gs *Ledger) MemberChanged(key string) { gs.reps.invalidate(key) }

// TakeAwaiting returns, and forgets, the members parked behind the named unplaced sibling.
func (gs *Ledger) TakeAwaiting(ns, name string) []*v1.Pod { return gs.waits.take(ns, name) }

// Representative: see representative.
func (gs *Ledger) Representative(ns, name, key string) (*v1.Pod, bool) {
	return gs.representative(ns, name, key)
}

// Prune is GC's part of the ledger: it forgets what belongs to gangs no longer live
// (liveGangs) and to pods no longer pending.
func (gs *Ledger) Prune(logger klog.Logger, liveGangs map[string]struct{}) {
	isLive := func(k string) bool { _, ok := liveGangs[k]; return ok }
	for _, k := range gs.incomplete.keys() {
		if !isLive(k) {
			gs.incomplete.remove(k)
		}
	}
	gs.reps.prune(isLive)
	gs.permitWoke.prune(isLive)
	gs.waits.prune(gs.members.Pending)
	for _, k := range gs.failed.Gangs() {
		if !isLive(k) {
			gs.forgetFailed(k, "")
		}
	}
	for _, p := range gs.blocked.snapshot() {
		if !gs.members.Pending(p.Namespace, p.Name, p.UID) {
			gs.blocked.remove(p)
		}
	}
	if gs.doubts.prune(time.Now()) {
		gs.wakeBlocked(logger)
	}
	gs.reserved.prune(gs.members.Pending)
}

// SetClock replaces the clock and the timer of deadlines and rests (tests move them by hand).
func (gs *Ledger) SetClock(now func() time.Time, after AfterFunc) { gs.now, gs.after = now, after }

// SetSpawn replaces how the ledger starts its goroutines (tests run them when they choose).
func (gs *Ledger) SetSpawn(spawn func(f func())) { gs.spawn = spawn }

// Now is the ledger's clock.
func (gs *Ledger) Now() time.Time { return gs.now() }

// Go runs f on a goroutine of its own (tests run it at a point of their choosing).
func (gs *Ledger) Go(f func()) { gs.spawn(f) }
