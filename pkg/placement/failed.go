package placement

import "sync"

// FailedDomains remembers, per gang and PodGroup UID, the domains where every candidate
// node of a pinned member was filtered out. Lock order: Store before FailedDomains.
type FailedDomains struct {
	mu sync.Mutex
	m  map[GangOwner]map[DomainRef]struct{}
}

// GangOwner is a gang key with the PodGroup UID that owns it.
type GangOwner struct {
	Gang  string
	Owner string
}

// NewFailedDomains returns an empty memory.
func NewFailedDomains() *FailedDomains {
	return &FailedDomains{m: map[GangOwner]map[DomainRef]struct{}{}}
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

// Values returns the failed domain values of g under topology key key.
func (f *FailedDomains) Values(g GangOwner, key string) map[string]struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]struct{}{}
	for d := range f.m[g] {
		if d.Key == key {
			out[d.Value] = struct{}{}
		}
	}
	return out
}

// Clear forgets g's failed domains.
func (f *FailedDomains) Clear(g GangOwner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, g)
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
}

// Gangs returns the gang keys with failed domains.
func (f *FailedDomains) Gangs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]struct{}{}
	var out []string
	for g := range f.m {
		if _, ok := seen[g.Gang]; !ok {
			seen[g.Gang] = struct{}{}
			out = append(out, g.Gang)
		}
	}
	return out
}
