package ledger

import (
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// armDeadline is called once for every new commitment. A forming commitment holds room that other
// pods cannot use, so it ends at the gang's effective timeout at the latest, whatever created
// it and whatever happens to the cycle that created it (a cycle that ends in an error runs no
// PostFilter; another plugin's PostFilter may succeed first; a gang whose last member never
// fits never reaches Permit). The timer lives only as long as the attempt: holdEnded stops it.
func (l *Ledger) armDeadline(c placement.Commitment, info gang.Info) {
	if !c.Forming() || info.Timeout <= 0 {
		return
	}
	gang, id := c.Gang, c.ID
	l.deadlines.start(id, l.now().Add(info.Timeout), info.Timeout, l.after, func() {
		l.expire(l.logger, gang, id, info)
	})
}

// holdEnded is called whenever an attempt stops forming (it committed, or it was released,
// unwound or expired): its expiry timer is stopped and its deadline forgotten.
func (l *Ledger) holdEnded(id uint64) {
	l.deadlines.stop(id)
}

// restKey names one resting domain of one gang.
type restKey struct {
	gang   string
	domain placement.DomainRef
}

// expire ends a reservation that outlived its deadline: the attempt is unwound (its waiters,
// if any, are rejected) and its domain rests for another timeout: the gang does not reserve
// there again before then, even when no other domain fits, so a gang that never becomes
// ready cannot keep room reserved by renewing. Every live unbound member of the gang is woken,
// not only the rejected waiters: a member parked for another reason may fit another domain
// now. When the rest ends the gang is woken again. A commitment that committed meanwhile is
// kept; expire reports whether it released one.
func (l *Ledger) expire(logger klog.Logger, key string, id uint64, info gang.Info) bool {
	res := l.unwindWith(logger, l.store.Expire, key, id, gang.CauseExpired, true)
	if !res.Released {
		return false
	}
	c := res.Commitment
	domain := placement.DomainRef{Key: c.Key, Value: c.Domain}
	until := l.now().Add(info.Timeout)
	l.failed.Rest(info.Owner(), domain, until)
	l.rests.start(restKey{gang: key, domain: domain}, until, info.Timeout, l.after, func() {
		l.activateGang(l.logger, metrics.TriggerReservationReleased, info.Namespace, info.Name, "")
	})
	l.activateGang(logger, metrics.TriggerReservationReleased, info.Namespace, info.Name, "")
	return true
}

// forgetFailed forgets the failed and resting domains of the gang (of owner only, when owner
// is not empty) and stops the timers that would wake it when those rests end.
func (l *Ledger) forgetFailed(gang, owner string) {
	if owner == "" {
		l.failed.ClearGang(gang)
	} else {
		l.failed.Clear(placement.GangOwner{Gang: gang, Owner: owner})
	}
	l.rests.stopWhere(func(k restKey) bool { return k.gang == gang })
}
