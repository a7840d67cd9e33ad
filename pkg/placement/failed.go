package placement

import (
	"sync"
	"time"
)

// FailedDomains remembers, per gang and PodGroup UID, the domains where every candidate
// node of a pinned member was filtered out, and the domains that rest: where the gang's
// reservation expired at its timeout, which the gang may not pin again before a deadline
// (the lap wrap does not forget them). Lock order: Store before FailedDomains.
type FailedDomains struct {
	mu      sync.Mutex
	m       map[GangOwner]map[DomainRef]struct{}
	resting map[GangOwner]map[DomainRef]time.Time
	now     func() time.Time
}

// GangOwner is a gang key with the PodGroup UID that owns it.
type GangOwner struct {
	Gang  string
	Owner string
}

// NewFailedDomains returns an empty memory.
func NewFailedDomains() *FailedDomains {
	return &FailedDomains{m: map[GangOwner]map[DomainRef]struct{}{},
		resting: map[GangOwner]map[DomainRef]time.Time{}, now: time.Now}
}

// Rest keeps d out of g's choices until until, lap wraps included.
func (f *FailedDomains) Rest(g GangOwner, d DomainRef, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resting[g] == nil {
		f.resting[g] = map[DomainRef]time.Time{}
	}
	f.resting[g][d] = until
}

// Resting returns g's domain values under key that still rest.
func (f *FailedDomains) Resting(g GangOwner, key string) map[string]struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]struct{}{}
	now := f.now()
	for d, until := range f.resting[g] {
		switch {
		case !now.Before(until):
			delete(f.resting[g], d)
		case d.Key == key:
			out[d.Value] = struct{}{}
		}
	}
	if len(f.resting[g]) == 0 {
		delete(f.resting, g)
	}
	return out
}

// Wrap forgets g's failed domains when the lap wraps; resting domains stay.
func (f *FailedDomains) Wrap(g GangOwner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, g)
}

// Add records a failed domain and reports whether it was new.
func (f *FailedDomains) Add(g GangOwner, d DomainRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	set, ok := f.m[g]
	if !ok {
		set = map[DomainRef]struct{}{}
		f.m[g] = set
	}
	if _, ok := set[d]; ok {
		return false
	}
	set[d] = struct{}{}
	return true
}

// Has reports whether d is a failed domain of g.
func (f *FailedDomains) Has(g GangOwner, d DomainRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.m[g][d]
	return ok
}

// Values returns the failed domain values of g under topology key key, resting ones included.
func (f *FailedDomains) Values(g GangOwner, key string) map[string]struct{} {
	out := f.Resting(g, key)
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := range f.m[g] {
		if d.Key == key {
			out[d.Value] = struct{}{}
		}
	}
	return out
}

// Clear forgets g's failed and resting domains (the gang formed, or its owner changed).
func (f *FailedDomains) Clear(g GangOwner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, g)
	delete(f.resting, g)
}

// ClearGang forgets the failed domains of every owner of gang.
func (f *FailedDomains) ClearGang(gang string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g := range f.m {
		if g.Gang == gang {
			delete(f.m, g)
		}
	}
	for g := range f.resting {
		if g.Gang == gang {
			delete(f.resting, g)
		}
	}
}

// Gangs returns the gang keys with failed domains.
func (f *FailedDomains) Gangs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]struct{}{}
	var out []string
	add := func(g GangOwner) {
		if _, ok := seen[g.Gang]; !ok {
			seen[g.Gang] = struct{}{}
			out = append(out, g.Gang)
		}
	}
	for g := range f.m {
		add(g)
	}
	for g := range f.resting {
		add(g)
	}
	return out
}
