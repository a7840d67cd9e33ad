package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Readings for the debug view, diagnostics and tests (Stats, Holds, Active, AssumedMembers).
// None of them hands out a container: what the ledger holds is changed only by its own
// methods.

// Stats is a reading of what the ledger holds, for diagnostics and tests.
type Stats struct {
	Pins        int // pins, forming or committed
	HeldDomains int // domains forming gangs hold
	// Blocked are the pods refused because of a hold, by namespace/name (a copy).
	Blocked       map[string]*v1.Pod
	Deadlines     int      // armed hold deadlines
	GroupRecords  int      // recorded placement groups
	WaitingGroups []string // placement groups waiting for partners
}

// Stats reads what the ledger holds.
func (l *Ledger) Stats() Stats {
	return Stats{
		Pins:          l.store.Len(),
		HeldDomains:   l.store.HeldDomains(),
		Blocked:       l.blocked.snapshot(),
		Deadlines:     l.deadlines.len(),
		GroupRecords:  l.groups.len(),
		WaitingGroups: l.groupsWaiting.keys(),
	}
}

// Held is one pin as the scheduler's debug view shows it: the commitment (a forming one with
// its reservation) and the moment its hold expires (zero when no deadline is armed).
type Held struct {
	Commitment placement.Commitment
	Deadline   time.Time
}

// Holds returns a copy of every pin with its hold deadline, sorted by gang key.
func (l *Ledger) Holds() []Held {
	pins := l.store.List()
	out := make([]Held, len(pins))
	for i, c := range pins {
		out[i].Commitment = c
		if at, ok := l.deadlines.when(c.ID); ok {
			out[i].Deadline = at
		}
	}
	return out
}

// Active reports whether this replica has run a scheduling cycle: only the leader does.
func (l *Ledger) Active() bool { return l.active.Load() }

// Assumed is a gang member the scheduler reserved a node for that is not bound yet (it waits
// at Permit or is binding): the API server does not show it on its node.
type Assumed struct {
	Namespace, Name string
	UID             types.UID
	Node            string
	// Stale is set for a member of an attempt that ended (deadAttempt): it still occupies its
	// node, but planning does not count it as placed.
	Stale bool
}

// AssumedMembers returns the members reserved on a node and not yet bound, sorted by
// namespace and name. A member the informer already shows bound is left out (its record
// lasts until the pod event that shows the bind).
func (l *Ledger) AssumedMembers() []Assumed {
	all := l.reserved.list()
	if l.members == nil {
		return all
	}
	out := all[:0]
	for _, a := range all {
		p, err := l.members.Pods(a.Namespace).Get(a.Name)
		if err == nil && p.UID == a.UID {
			if p.Spec.NodeName != "" {
				continue
			}
			if key, _, ok := gang.Of(p); ok {
				a.Stale = l.deadAttempt(key, p)
			}
		}
		out = append(out, a)
	}
	return out
}
