package ledger

import "sync"

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
