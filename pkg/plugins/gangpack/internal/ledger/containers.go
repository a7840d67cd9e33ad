package ledger

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// attemptMap records, per pod, the attempt id it waits under at Permit and when its Permit
// recorded it.
type attemptMap struct {
	mu sync.RWMutex
	m  map[string]attemptRecord
}

type attemptRecord struct {
	id uint64
	at time.Time
}

func newAttemptMap() *attemptMap { return &attemptMap{m: map[string]attemptRecord{}} }

func (a *attemptMap) set(pod string, id uint64, at time.Time) {
	a.mu.Lock()
	a.m[pod] = attemptRecord{id: id, at: at}
	a.mu.Unlock()
}

func (a *attemptMap) get(pod string) (uint64, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	r, ok := a.m[pod]
	return r.id, ok
}

// since returns when the pod's Permit recorded attempt id (ok false: another or none).
func (a *attemptMap) since(pod string, id uint64) (time.Time, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	r, ok := a.m[pod]
	return r.at, ok && r.id == id
}

func (a *attemptMap) forget(pod string) {
	a.mu.Lock()
	delete(a.m, pod)
	a.mu.Unlock()
}

// forgetIf removes the record only if it still maps to id.
func (a *attemptMap) forgetIf(pod string, id uint64) {
	a.mu.Lock()
	if a.m[pod].id == id {
		delete(a.m, pod)
	}
	a.mu.Unlock()
}

// podSet is a mutex-guarded set of pods (the reservation-blocked set).
type podSet struct {
	mu sync.Mutex
	m  map[string]*v1.Pod
}

func newPodSet() *podSet { return &podSet{m: map[string]*v1.Pod{}} }

func (s *podSet) add(p *v1.Pod) {
	s.mu.Lock()
	s.m[p.Namespace+"/"+p.Name] = p
	s.mu.Unlock()
}

func (s *podSet) remove(p *v1.Pod) {
	s.mu.Lock()
	delete(s.m, p.Namespace+"/"+p.Name)
	s.mu.Unlock()
}

// drain empties the set and returns its pods.
func (s *podSet) drain() map[string]*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.m
	s.m = map[string]*v1.Pod{}
	return out
}

func (s *podSet) snapshot() map[string]*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*v1.Pod, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

func (s *podSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// keySet is a mutex-guarded set of gang keys (the templates-incomplete set).
type keySet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func newKeySet() *keySet { return &keySet{m: map[string]struct{}{}} }

func (s *keySet) add(k string) {
	s.mu.Lock()
	s.m[k] = struct{}{}
	s.mu.Unlock()
}

// remove deletes k and reports whether it was present.
func (s *keySet) remove(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	delete(s.m, k)
	return ok
}

func (s *keySet) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for k := range s.m {
		out = append(out, k)
	}
	return out
}

func (s *keySet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

// repCache caches each gang's representative (gangs.representative). gen moves with every
// informer event of a member, so an answer computed from an older listing is never stored.
type repCache struct {
	mu sync.Mutex
	m  map[string]*repEntry
}

type repEntry struct {
	gen   uint64
	valid bool
	rep   *v1.Pod // nil: no live, unbound, ungated member
}

func newRepCache() *repCache { return &repCache{m: map[string]*repEntry{}} }

// lookup returns the cached representative, or ok false and the generation to store under.
func (c *repCache) lookup(key string) (rep *v1.Pod, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		e = &repEntry{}
		c.m[key] = e
	}
	return e.rep, e.gen, e.valid
}

// store records rep unless an event of the gang came in since lookup returned gen.
func (c *repCache) store(key string, gen uint64, rep *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil && e.gen == gen {
		e.rep, e.valid = rep, true
	}
}

func (c *repCache) invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil {
		e.gen++
		e.rep, e.valid = nil, false
	}
}

// prune forgets the gangs keep rejects (GC: gangs without a live pod).
func (c *repCache) prune(keep func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !keep(k) {
			delete(c.m, k)
		}
	}
}

// waitSet records the members parked behind an unplaced sibling (a sibling or spread-anchor
// wait): awaited namespace/name → waiter namespace/name → waiter.
type waitSet struct {
	mu sync.Mutex
	m  map[string]map[string]*v1.Pod
}

func newWaitSet() *waitSet { return &waitSet{m: map[string]map[string]*v1.Pod{}} }

func (s *waitSet) add(awaited, waiter *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := awaited.Namespace + "/" + awaited.Name
	if s.m[k] == nil {
		s.m[k] = map[string]*v1.Pod{}
	}
	s.m[k][waiter.Namespace+"/"+waiter.Name] = waiter
}

// take forgets and returns the waiters behind the pod ns/name.
func (s *waitSet) take(ns, name string) []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ns + "/" + name
	w := s.m[k]
	if len(w) == 0 {
		return nil
	}
	delete(s.m, k)
	out := make([]*v1.Pod, 0, len(w))
	for _, p := range w {
		out = append(out, p)
	}
	return out
}

// prune forgets the waiters and the awaited pods that keep rejects (GC: no longer pending;
// the uid is empty for an awaited pod).
func (s *waitSet) prune(keep func(namespace, name string, uid types.UID) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.m {
		for wk, p := range w {
			if !keep(p.Namespace, p.Name, p.UID) {
				delete(w, wk)
			}
		}
		ns, name, err := cache.SplitMetaNamespaceKey(k)
		if len(w) == 0 || err != nil || !keep(ns, name, "") {
			delete(s.m, k)
		}
	}
}
