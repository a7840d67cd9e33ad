package ledger

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Ledger is the one owner of the state that lives across scheduling cycles: pins and their
// reservations (the store, which announces every change), failed and resting domains, the
// attempt each waiting member waits under, the nodes members were reserved on, the pods
// parked behind holds, the gangs waiting for members, the members waiting for a sibling,
// waiting placement groups and their records, bindings in doubt, the gangs a previous
// leader left nominated, and the timers of deadlines, rests and doubts. Its fields are
// unexported: its methods are the only writers.
type Ledger struct {
	handle  fwk.Handle
	members *gang.Members
	// ctx and logger are for work outside a scheduling cycle (timers, GC, supervision).
	ctx    context.Context
	logger klog.Logger

	store      *placement.Store         // pins and holds
	failed     *placement.FailedDomains // domains a gang's attempts failed in
	attempts   *attemptMap              // pod → attempt id it waits under at Permit
	reserved   *reservedNodes           // member → node it was reserved on, until bound
	blocked    *podSet                  // pods refused because of a hold, woken when one lifts
	incomplete *keySet                  // gangs waiting for all their members to exist
	reps       *repCache                // each gang's representative for freed-room wake-ups
	waits      *waitSet                 // members parked behind an unplaced sibling
	permitWoke *permitWakes             // the attempt whose first Permit woke each gang
	// groupsWaiting are the placement groups waiting for partners; groups records the
	// partners pinned together (partners_permit.go).
	groupsWaiting *groupStates
	groups        *groupRecords
	doubts        *bindsInDoubt        // nodes of pods whose binding failed after admission
	deadlines     *timerSet[uint64]    // attempt id → its hold's expiry timer, until the attempt ends
	rests         *timerSet[restKey]   // resting domain of a gang → the timer that wakes it at the rest's end
	doubtTimers   *timerSet[types.UID] // pod in doubt → the timer that ends the doubt at maxDoubt
	protections   *timerSet[types.UID] // standalone preemptor → the timer that wakes refused pods when its protection ends
	degraded      *degradedReports     // degraded gangs already reported as not repairable
	// nominees are the gangs a previous leader left nominated, until the first PreFilter
	// takes them (nominees.go).
	nominees *nominees

	// active is set by the first PreFilter: a standby replica makes no activations.
	active atomic.Bool
	// after, now and spawn are fixed at construction (Options): other goroutines read them.
	after AfterFunc
	now   func() time.Time
	spawn func(f func())
}

// Options are the ledger's clock, timer and goroutine starter. A zero field takes the real
// one; tests pass their own, as the pacer takes its clock.
type Options struct {
	// Now is the clock of deadlines and rests (time.Now).
	Now func() time.Time
	// After runs f once d has passed (time.AfterFunc).
	After AfterFunc
	// Spawn runs f on a goroutine of its own: a waiter's supervisor, the eviction calls
	// (go f()).
	Spawn func(f func())
}

// New returns an empty ledger over the framework handle h (it activates and admits pods
// through it) and the member index ml; onPins is told the held domains whenever the pins
// change.
func New(ctx context.Context, h fwk.Handle, ml *gang.Members, onPins func(held []placement.DomainRef), o Options) *Ledger {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = realAfter
	}
	if o.Spawn == nil {
		o.Spawn = func(f func()) { go f() }
	}
	l := &Ledger{
		handle:        h,
		members:       ml,
		ctx:           ctx,
		logger:        klog.FromContext(ctx),
		store:         placement.NewStore(),
		failed:        placement.NewFailedDomains(),
		attempts:      newAttemptMap(),
		reserved:      newReservedNodes(),
		blocked:       newPodSet(),
		incomplete:    newKeySet(),
		reps:          newRepCache(),
		waits:         newWaitSet(),
		permitWoke:    newPermitWakes(),
		groupsWaiting: newGroupStates(),
		groups:        newGroupRecords(),
		doubts:        newBindsInDoubt(),
		deadlines:     newTimerSet[uint64](),
		rests:         newTimerSet[restKey](),
		doubtTimers:   newTimerSet[types.UID](),
		protections:   newTimerSet[types.UID](),
		degraded:      &degradedReports{},
		nominees:      newNominees(),
		after:         o.After,
		now:           o.Now,
		spawn:         o.Spawn,
	}
	l.store.SetOnChange(func() {
		metrics.PinnedGroups.Set(float64(l.store.Len()))
		if onPins != nil {
			onPins(l.store.HeldDomainRefs())
		}
	})
	return l
}

// Now is the ledger's clock.
func (l *Ledger) Now() time.Time { return l.now() }

// Go runs f on a goroutine of its own (tests run it at a point of their choosing).
func (l *Ledger) Go(f func()) { l.spawn(f) }
