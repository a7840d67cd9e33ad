package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Readings for diagnostics and tests, and the few verbs tests set a scene with. None of them
// hands out a container: what the ledger holds is changed only by its own methods.

// Len is the number of pins.
func (l *Ledger) Len() int { return l.store.Len() }

// HeldDomains is the number of domains forming gangs hold.
func (l *Ledger) HeldDomains() int { return l.store.HeldDomains() }

// Blocked returns the pods refused because of a hold, by key.
func (l *Ledger) Blocked() map[string]*v1.Pod { return l.blocked.snapshot() }

// Deadlines is the number of armed hold deadlines.
func (l *Ledger) Deadlines() int { return l.deadlines.len() }

// GroupRecords is the number of recorded placement groups.
func (l *Ledger) GroupRecords() int { return l.groups.len() }

// WaitingGroups lists the placement groups waiting for partners.
func (l *Ledger) WaitingGroups() []string { return l.groupsWaiting.keys() }

// RecordGroup records that gang's attempt id belongs to the group's current placement.
func (l *Ledger) RecordGroup(group, gang string, id uint64) { l.groups.record(group, gang, id) }

// ReleaseSilently: see releaseSilently.
func (l *Ledger) ReleaseSilently(logger klog.Logger, key string, id uint64) {
	l.releaseSilently(logger, key, id)
}

// Rest makes the domain rest for the gang owner until the given time.
func (l *Ledger) Rest(o placement.GangOwner, d placement.DomainRef, until time.Time) {
	l.failed.Rest(o, d, until)
}

// DoubtEvents are the pod informer handlers that end bindings in doubt.
func (l *Ledger) DoubtEvents() cache.ResourceEventHandlerFuncs { return l.doubtEvents() }

// ResolveDoubt ends the pod's binding in doubt and reports whether it was in doubt.
func (l *Ledger) ResolveDoubt(uid types.UID) bool { return l.doubts.resolve(uid) }

// SetNow replaces the clock of deadlines and rests.
func (l *Ledger) SetNow(now func() time.Time) { l.now = now }

// SetAfter replaces the timer of deadlines and rests.
func (l *Ledger) SetAfter(after AfterFunc) { l.after = after }

// SetHandle replaces the framework handle the ledger activates and admits pods through
// (tests record those calls).
func (l *Ledger) SetHandle(h fwk.Handle) { l.handle = h }

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
// namespace and name.
func (l *Ledger) AssumedMembers() []Assumed {
	out := l.reserved.list()
	if l.members == nil {
		return out
	}
	for i, a := range out {
		p, err := l.members.Pods(a.Namespace).Get(a.Name)
		if err != nil || p.UID != a.UID {
			continue
		}
		if key, _, ok := gang.Of(p); ok {
			out[i].Stale = l.deadAttempt(key, p)
		}
	}
	return out
}
