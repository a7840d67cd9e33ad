package ledger

import (
	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Representative returns the gang's representative for wake-ups on freed room (see
// representsGang); ok is false when the members cannot be listed. The answer is cached per
// gang until an informer event of one of its members: the n parked members of a gang asking
// about one deletion list the gang once, not n times. A cached representative that the
// informer no longer shows pending and ungated (its event not delivered yet) is recomputed.
func (l *Ledger) Representative(ns, name, key string) (*v1.Pod, bool) {
	rep, gen, cached := l.reps.lookup(key)
	if cached && (rep == nil || l.members.UngatedPending(rep)) {
		return rep, true
	}
	pods, err := l.members.List(ns, name)
	if err != nil {
		return nil, false
	}
	rep = FirstUngated(pods)
	l.reps.store(key, gen, rep)
	return rep, true
}

// FirstUngated returns the first by name of the live, unbound pods without scheduling gates.
func FirstUngated(pods []*v1.Pod) *v1.Pod {
	var rep *v1.Pod
	for _, p := range pods {
		if gang.Live(p) && p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) == 0 && (rep == nil || p.Name < rep.Name) {
			rep = p
		}
	}
	return rep
}
