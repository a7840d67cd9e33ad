package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Readings for diagnostics and tests, and the few verbs tests set a scene with. None of them
// hands out a container: what the ledger holds is changed only by its own methods.

// Len is the number of pins.
func (gs *Ledger) Len() int { return gs.store.Len() }

// HeldDomains is the number of domains forming gangs hold.
func (gs *Ledger) HeldDomains() int { return gs.store.HeldDomains() }

// Blocked returns the pods refused because of a hold, by key.
func (gs *Ledger) Blocked() map[string]*v1.Pod { return gs.blocked.snapshot() }

// Deadlines is the number of armed hold deadlines.
func (gs *Ledger) Deadlines() int { return gs.deadlines.len() }

// GroupRecords is the number of recorded placement groups.
func (gs *Ledger) GroupRecords() int { return gs.groups.len() }

// WaitingGroups lists the placement groups waiting for partners.
func (gs *Ledger) WaitingGroups() []string { return gs.groupsWaiting.keys() }

// RecordGroup records that gang's attempt id belongs to the group's current placement.
func (gs *Ledger) RecordGroup(group, gang string, id uint64) { gs.groups.record(group, gang, id) }

// ReleaseSilently: see releaseSilently.
func (gs *Ledger) ReleaseSilently(logger klog.Logger, key string, id uint64) {
	gs.releaseSilently(logger, key, id)
}

// Rest makes the domain rest for the gang owner until the given time.
func (gs *Ledger) Rest(o placement.GangOwner, d placement.DomainRef, until time.Time) {
	gs.failed.Rest(o, d, until)
}

// DoubtEvents are the pod informer handlers that end bindings in doubt.
func (gs *Ledger) DoubtEvents() cache.ResourceEventHandlerFuncs { return gs.doubtEvents() }

// ResolveDoubt ends the pod's binding in doubt and reports whether it was in doubt.
func (gs *Ledger) ResolveDoubt(uid types.UID) bool { return gs.doubts.resolve(uid) }

// SetNow replaces the clock of deadlines and rests.
func (gs *Ledger) SetNow(now func() time.Time) { gs.now = now }

// SetAfter replaces the timer of deadlines and rests.
func (gs *Ledger) SetAfter(after AfterFunc) { gs.after = after }

// SetHandle replaces the framework handle the ledger activates and admits pods through
// (tests record those calls).
func (gs *Ledger) SetHandle(h fwk.Handle) { gs.handle = h }
