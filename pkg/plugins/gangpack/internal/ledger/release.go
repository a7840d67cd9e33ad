package ledger

import (
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// UnwindResult reports an unwind release.
type UnwindResult struct {
	Commitment placement.Commitment // the commitment released, when released
	Released   bool
	NewFailed  bool
	Rejected   int
}

// Unwind drops the gang's commitment if id owns it (placement.AnyID = whatever the owner) and
// optionally remembers its domain as failed, under the store lock; then rejects the waiters
// of that attempt, counts, wakes reservation-blocked pods and logs.
func (l *Ledger) Unwind(logger klog.Logger, gang string, id uint64, cause string, markFailed bool) UnwindResult {
	return l.unwindWith(logger, l.store.Release, gang, id, cause, markFailed)
}

// releaser is a store operation that drops a commitment and runs onRelease under its lock
// (Store.Release, Store.Expire).
type releaser func(gang string, id uint64, onRelease func(placement.Commitment)) (placement.Commitment, bool)

// unwindWith is unwind with the store operation that decides whether the commitment goes.
func (l *Ledger) unwindWith(logger klog.Logger, release releaser, gang string, id uint64, cause string, markFailed bool) UnwindResult {
	var res UnwindResult
	c, ok := release(gang, id, func(c placement.Commitment) {
		if markFailed {
			res.NewFailed = l.failed.Add(placement.GangOwner{Gang: gang, Owner: c.Owner}, placement.DomainRef{Key: c.Key, Value: c.Domain})
		}
	})
	if !ok {
		return res
	}
	// The waiters are rejected after the store's lock is released: walking every waiting pod
	// under it would hold up Filter's reservation reads on every node. Nothing admits them
	// meanwhile: admission (Permit, superviseWaiter) first asks the store whether the attempt
	// still owns the pin, and it no longer does.
	res.Rejected = l.rejectWaiters(gang, c.ID)
	res.Released, res.Commitment = true, c
	l.holdEnded(c.ID)
	metrics.UnwindTotal.Inc()
	logger.V(4).Info("gangpack.unwind", "gang", c.Gang, "domain", c.Domain, "cause", cause, "rejectedWaiters", res.Rejected)
	l.cascade(logger, gang, c.ID, cause)
	l.wakeBlocked(logger)
	return res
}

// releaseSilently is the silent release of a pin nobody waits under: no waiter rejection, no
// Unwind count.
func (l *Ledger) releaseSilently(logger klog.Logger, gang string, id uint64) {
	if c, ok := l.store.Release(gang, id, nil); ok {
		l.holdEnded(c.ID)
		l.wakeBlocked(logger)
	}
}

// forEachWaiter calls f for every framework waiting pod of gang that waits under attempt id.
func (l *Ledger) forEachWaiter(key string, id uint64, f func(fwk.WaitingPod)) {
	l.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		p := wp.GetPod()
		if k, _, ok := gang.Of(p); !ok || k != key {
			return
		}
		if got, ok := l.attempts.get(gang.PodKey(p)); ok && got == id {
			f(wp)
		}
	})
}

// rejectWaiters rejects the waiting pods of gang's attempt id and returns how many.
func (l *Ledger) rejectWaiters(key string, id uint64) int {
	n := 0
	text := msg.Unwound(key)
	l.forEachWaiter(key, id, func(wp fwk.WaitingPod) {
		wp.Reject(gang.PluginName, text)
		n++
	})
	return n
}

// hasWaiters reports whether any waiting pod of gang waits under attempt id.
func (l *Ledger) hasWaiters(gang string, id uint64) bool {
	found := false
	l.forEachWaiter(gang, id, func(fwk.WaitingPod) { found = true })
	return found
}

// Abandon unwinds whatever pin the gang has and forgets its failed domains: its PodGroup is
// gone (cause), or GC found the gang dead or re-created.
func (l *Ledger) Abandon(logger klog.Logger, key string, id uint64, cause string) {
	l.Unwind(logger, key, id, cause, false)
	l.forgetFailed(key, "")
}
