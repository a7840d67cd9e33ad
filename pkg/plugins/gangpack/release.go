package gangpack

import (
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Unwind causes (gangpack.unwind cause field).
const (
	causeUnreserve       = "unreserve"
	causePostFilter      = "postfilter"
	causeGC              = "gc"
	causePodGroupMissing = "podgroup_missing"
	causeOwnerChange     = "owner_change"
	causeTopologyChange  = "topology_change"
)

// unwindResult reports an unwind release.
type unwindResult struct {
	released   bool
	commitment placement.Commitment
	newFailed  bool
	rejected   int
}

// unwind is placement.md §12's unwind release: drop the gang's commitment if id owns it
// (placement.AnyID = whatever the owner), optionally remember its domain as failed, and
// reject the waiters of that attempt, all under the store lock; then count, set the gauge,
// wake reservation-blocked pods and log.
func (pl *GangPack) unwind(logger klog.Logger, gang string, id uint64, cause string, markFailed bool) unwindResult {
	var res unwindResult
	c, ok := pl.store.Release(gang, id, func(c placement.Commitment) {
		if markFailed {
			res.newFailed = pl.failed.Add(placement.GangOwner{Gang: gang, Owner: c.Owner}, placement.DomainRef{Key: c.Key, Value: c.Domain})
		}
		res.rejected = pl.rejectWaiters(gang, c.ID)
	})
	if !ok {
		return res
	}
	res.released, res.commitment = true, c
	unwindTotal.Inc()
	pl.pinsChanged()
	logger.V(4).Info("gangpack.unwind", "gang", gang, "domain", c.Domain, "cause", cause, "rejectedWaiters", res.rejected)
	pl.wakeBlocked(logger)
	return res
}

// releaseSilently is the silent release (P7, P9): no waiter rejection, no unwind count.
func (pl *GangPack) releaseSilently(logger klog.Logger, gang string, id uint64) bool {
	if _, ok := pl.store.Release(gang, id, nil); !ok {
		return false
	}
	pl.pinsChanged()
	pl.wakeBlocked(logger)
	return true
}

// rejectWaiters rejects the framework's waiting pods of gang that wait under attempt id.
func (pl *GangPack) rejectWaiters(gang string, id uint64) int {
	if pl.handle == nil {
		return 0
	}
	n := 0
	msg := msgUnwound(gang)
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		p := wp.GetPod()
		if key, _, ok := gangOf(p); !ok || key != gang {
			return
		}
		if got, ok := pl.attempts.get(podKey(p)); ok && got == id {
			wp.Reject(Name, msg)
			n++
		}
	})
	return n
}

// hasWaiters reports whether any framework waiting pod of gang waits under attempt id.
func (pl *GangPack) hasWaiters(gang string, id uint64) bool {
	if pl.handle == nil {
		return false
	}
	found := false
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		p := wp.GetPod()
		if key, _, ok := gangOf(p); ok && key == gang {
			if got, ok := pl.attempts.get(podKey(p)); ok && got == id {
				found = true
			}
		}
	})
	return found
}
