package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// A member's way through a scheduling cycle: PreFilter's start (StartCycle), Reserve,
// Unreserve and PostBind. Permit is in admit.go; PreFilter's decisions carried out are in
// pins.go and drop.go; what the extension points read is in read.go.

// StartCycle is every PreFilter's first call: it marks the ledger active (only an active, leading
// replica activates pods) and returns the hold generation the cycle's decisions are made under.
func (l *Ledger) StartCycle() uint64 {
	l.active.Store(true)
	return l.store.Generation()
}

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

// UnwindOnUnreserve is Unreserve's unwind of a member's attempt. kube-scheduler's own Permit timeout
// has the gang's (capped) timeout too and starts a cycle after the pin, so it may end the
// attempt before the expiry timer fires: an attempt still forming at or past its deadline is
// expired (its domain rests) rather than merely unwound, whichever timer came first.
func (l *Ledger) UnwindOnUnreserve(logger klog.Logger, info gang.Info, id uint64) {
	if l.deadlines.reached(id, l.now()) && l.expire(logger, info.Key, id, info) {
		return
	}
	l.Unwind(logger, info.Key, id, gang.CauseUnreserve, false)
}
