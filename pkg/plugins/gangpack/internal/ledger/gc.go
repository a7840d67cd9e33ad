package ledger

import (
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Garbage collection (Prune, PruneGroups) and the degraded gangs already reported.

// degradedReports are the degraded gangs whose PodGroup was told that they cannot be
// repaired in their domain (the GangDegraded event), gang key → domain: one event per
// degradation, until the gang is whole again (KeepDegraded).
type degradedReports struct {
	mu sync.Mutex
	m  map[string]string
}

// ReportDegraded records that the gang, degraded in domain, cannot be repaired there, and
// reports whether that is news: false when it was already reported for the same domain.
func (l *Ledger) ReportDegraded(key, domain string) bool {
	r := l.degraded
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]string{}
	}
	if d, ok := r.m[key]; ok && d == domain {
		return false
	}
	r.m[key] = domain
	return true
}

// KeepDegraded forgets the reports of gangs that are no longer degraded (not in still), so a
// later degradation is reported again.
func (l *Ledger) KeepDegraded(still map[string]struct{}) {
	r := l.degraded
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if _, ok := still[k]; !ok {
			delete(r.m, k)
		}
	}
}

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

// PruneGroups is GC's part for placement groups: a waiting group that wanted no longer
// reports is forgotten, and so is a group record none of whose attempts still owns its
// partner's pin (every partner was released silently or re-planned).
func (l *Ledger) PruneGroups(wanted func(group string) bool) {
	for _, k := range l.groupsWaiting.keys() {
		if !wanted(k) {
			l.groupsWaiting.remove(k)
		}
	}
	l.groups.prune(func(gang string, id uint64) bool {
		c, ok := l.store.Get(gang)
		return ok && c.ID == id
	})
}
