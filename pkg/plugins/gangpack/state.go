package gangpack

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// attemptMap records, per pod, the attempt id it waits under at Permit.
type attemptMap struct {
	mu sync.RWMutex
	m  map[string]uint64
}

func newAttemptMap() *attemptMap { return &attemptMap{m: map[string]uint64{}} }

func (a *attemptMap) set(pod string, id uint64) {
	a.mu.Lock()
	a.m[pod] = id
	a.mu.Unlock()
}

func (a *attemptMap) get(pod string) (uint64, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	id, ok := a.m[pod]
	return id, ok
}

func (a *attemptMap) forget(pod string) {
	a.mu.Lock()
	delete(a.m, pod)
	a.mu.Unlock()
}

// forgetIf removes the record only if it still maps to id.
func (a *attemptMap) forgetIf(pod string, id uint64) {
	a.mu.Lock()
	if a.m[pod] == id {
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

// readState returns the CycleState entry under key if it has type T.
func readState[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) (T, bool) {
	var zero T
	if cs == nil {
		return zero, false
	}
	d, err := cs.Read(key)
	if err != nil {
		return zero, false
	}
	t, ok := d.(T)
	return t, ok
}
