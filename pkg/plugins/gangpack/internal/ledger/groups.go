package ledger

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// groupStates remembers the groups whose members wait, with why.
type groupStates struct {
	mu sync.Mutex
	m  map[string]string
}

func newGroupStates() *groupStates { return &groupStates{m: map[string]string{}} }

// set records why the group waits and returns the previous reason, if any.
func (s *groupStates) set(group, why string) (prev string, had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had = s.m[group]
	s.m[group] = why
	return prev, had
}

// remove forgets the group and reports whether it waited.
func (s *groupStates) remove(group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[group]
	delete(s.m, group)
	return ok
}

func (s *groupStates) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for k := range s.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ActivateGroup wakes the live unbound members of every partner gang (namespace/name
// references) except the pod named except.
func (l *Ledger) ActivateGroup(logger klog.Logger, partners []types.NamespacedName, except string) int {
	var pods []*v1.Pod
	for _, pt := range partners {
		list, err := l.members.LiveUnbound(pt.Namespace, pt.Name, except)
		if err != nil {
			logger.Error(err, "List partner members for activation", "gang", pt.String())
			continue
		}
		pods = append(pods, list...)
	}
	return l.Activate(logger, metrics.TriggerTemplatesComplete, pods)
}

// groupRecords remembers which partners' attempts were pinned together, so that unwinding
// one of them unwinds them all (docs/design.md §19, item 4). A group's record ends when the whole group is
// admitted at Permit or when it is unwound.
type groupRecords struct {
	mu      sync.Mutex
	byGroup map[string]map[string]uint64 // group key → partner gang key → attempt id
	byGang  map[string]string            // partner gang key → group key
}

func newGroupRecords() *groupRecords {
	return &groupRecords{byGroup: map[string]map[string]uint64{}, byGang: map[string]string{}}
}

// record notes that gang's attempt id belongs to the group's current placement.
func (r *groupRecords) record(group, gang string, id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.byGroup[group]
	if m == nil {
		m = map[string]uint64{}
		r.byGroup[group] = m
	}
	m[gang] = id
	r.byGang[gang] = group
}

// take ends the record of the group gang's attempt id belongs to and returns its other
// partners' attempts; ok is false when that attempt is in no record.
func (r *groupRecords) take(gang string, id uint64) (group string, others map[string]uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	group, ok = r.byGang[gang]
	if !ok || r.byGroup[group][gang] != id {
		return "", nil, false
	}
	others = r.byGroup[group]
	r.forgetLocked(group)
	delete(others, gang)
	return group, others, true
}

// forget ends the group's record.
func (r *groupRecords) forget(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(group)
}

func (r *groupRecords) forgetLocked(group string) {
	for g := range r.byGroup[group] {
		if r.byGang[g] == group {
			delete(r.byGang, g)
		}
	}
	delete(r.byGroup, group)
}

// len is the number of recorded groups (tests).
func (r *groupRecords) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byGroup)
}

// cascade unwinds the partners pinned together with gang's released attempt id: one
// partner's timeout, rejection or PodGroup deletion unwinds the whole group (docs/design.md §19, item 4).
func (l *Ledger) cascade(logger klog.Logger, gang string, id uint64, cause string) {
	group, others, ok := l.groups.take(gang, id)
	if !ok {
		return
	}
	metrics.GroupTotal.WithLabelValues(metrics.GroupUnwound).Inc()
	logger.V(4).Info("gangpack.group.unwind", "group", group, "gang", gang, "cause", cause, "partners", len(others))
	for other, oid := range others {
		l.unwindWith(logger, l.store.Release, other, oid, cause, false)
	}
}

// prune forgets the groups none of whose recorded attempts is still current.
func (r *groupRecords) prune(current func(gang string, id uint64) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for group, m := range r.byGroup {
		alive := false
		for gang, id := range m {
			if current(gang, id) {
				alive = true
				break
			}
		}
		if !alive {
			r.forgetLocked(group)
		}
	}
}
