package quality

// Placement quality as a first-class signal (ALPHA metrics listed in docs/reference.md).
// Everything here is observation only: no function in this file changes a scheduling
// decision. Hooks:
//
//   - the split refusal of the gate counts gang_placement_total{outcome="split_refused"};
//   - every planning over all nodes sets the per-domain member room, the largest placeable
//     gang and the stranded capacity;
//   - every pin, drain to 0 and release refreshes the per-domain held gauge from the pin store;
//   - "no domain has room" records the gang's need as pending, PostBind forgets it;
//   - Reserve marks the member whose drain commits the gang; its Permit admit counts
//     single_domain (or split) after checking the snapshot, and observes the formation time.

import (
	"reflect"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// CountSplitRefused counts a split refusal of the gate.
func CountSplitRefused() { metrics.PlacementTotal.WithLabelValues(metrics.OutcomeSplitRefused).Inc() }

// Tracker remembers which per-domain series exist and which gangs are pending.
type Tracker struct {
	mu sync.Mutex
	// known: topology key → domain → member room of the latest planning over all nodes (the
	// member_room series, set only when they change).
	known map[string]map[string]int
	// held: the domains held at the last refresh. Every known domain has a held series (1 when
	// held, else 0), and so has every held domain.
	held map[placement.DomainRef]struct{}
	// pending: topology key → gang key → need, for gangs pending with "no domain has room".
	pending map[string]map[string]int
	// resources: topology key → the resource of its stranded_capacity series.
	resources map[string]string
	// seen: topology key → when a planning last recorded it.
	seen map[string]time.Time
	// rooms: topology key → the rooms map of its last recording (maps the plan cache reuses
	// are recorded once).
	rooms map[string]map[string]int
}

// keyRetention is how long the series of a topology key outlive its last planning.
const keyRetention = 10 * time.Minute

// New returns an empty Tracker.
func New() *Tracker {
	return &Tracker{
		known:     map[string]map[string]int{},
		held:      map[placement.DomainRef]struct{}{},
		pending:   map[string]map[string]int{},
		resources: map[string]string{},
		seen:      map[string]time.Time{},
		rooms:     map[string]map[string]int{},
	}
}

// HeldChanged is the pin store's event, on every pin, drain and release: held are the
// domains forming gangs hold now. A domain that became held gets 1, one that stopped being
// held gets 0 while it is known and loses its series otherwise. It touches only the domains
// whose state changed.
func (q *Tracker) HeldChanged(held []placement.DomainRef) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := map[placement.DomainRef]struct{}{}
	for _, ref := range held {
		now[ref] = struct{}{}
		if _, was := q.held[ref]; !was {
			metrics.DomainHeld.WithLabelValues(ref.Key, ref.Value).Set(1)
		}
	}
	for ref := range q.held {
		if _, still := now[ref]; !still {
			q.unheld(ref)
		}
	}
	q.held = now
}

// unheld sets the series of a domain no longer held: 0 while the domain is known, else gone.
func (q *Tracker) unheld(ref placement.DomainRef) {
	if _, known := q.known[ref.Key][ref.Value]; known {
		metrics.DomainHeld.WithLabelValues(ref.Key, ref.Value).Set(0)
		return
	}
	metrics.DomainHeld.DeleteLabelValues(ref.Key, ref.Value)
}

// forgetDomain drops the series of a domain that left the known set, unless it is held.
func (q *Tracker) forgetDomain(key, d string) {
	metrics.DomainMemberRoom.DeleteLabelValues(key, d)
	if _, held := q.held[placement.DomainRef{Key: key, Value: d}]; !held {
		metrics.DomainHeld.DeleteLabelValues(key, d)
	}
}

// Planned is planning's event: one planning over all nodes under key gave each domain's
// member room for a gang (gangKey, still needing need members) and, when the gang's shapes
// request an extended resource, each domain's free units of it. The tracker derives the
// largest placeable gang and the stranded capacity (below the smallest pending gang's need,
// pending telling which gangs still wait) and records the series.
func (q *Tracker) Planned(key, gangKey string, need int, rooms map[string]int, free map[string]int64, resource string, hasResource bool, pending func(gangKey string) bool) {
	_, largest, _ := topology.Largest(rooms)
	var stranded int64
	if hasResource {
		stranded = StrandedUnits(rooms, free, q.SmallestNeed(key, gangKey, need, pending))
	}
	q.Record(key, rooms, largest, resource, hasResource, stranded)
}

// Record sets the gauges of one planning over all nodes under key, deletes the member_room
// series of domains that planning no longer saw, and refreshes the held series.
func (q *Tracker) Record(key string, rooms map[string]int, largest int, resource string, hasResource bool, stranded int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sameMap(rooms, q.rooms[key]) { // the plan cache's planning of last time: series unchanged
		q.finishRecord(key, largest, resource, hasResource, stranded)
		return
	}
	q.rooms[key] = rooms
	last := q.known[key]
	seen := make(map[string]int, len(rooms))
	for d, r := range rooms {
		seen[d] = r
		old, ok := last[d]
		if !ok || old != r {
			metrics.DomainMemberRoom.WithLabelValues(key, d).Set(float64(r))
		}
		if _, held := q.held[placement.DomainRef{Key: key, Value: d}]; !ok && !held {
			metrics.DomainHeld.WithLabelValues(key, d).Set(0)
		}
	}
	q.known[key] = seen
	for d := range last {
		if _, ok := seen[d]; !ok {
			q.forgetDomain(key, d)
		}
	}
	q.finishRecord(key, largest, resource, hasResource, stranded)
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]int) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// finishRecord sets the per-key gauges of a planning and refreshes the held series.
func (q *Tracker) finishRecord(key string, largest int, resource string, hasResource bool, stranded int64) {
	q.seen[key] = time.Now()
	metrics.LargestPlaceableGang.WithLabelValues(key).Set(float64(largest))
	if hasResource {
		if old, ok := q.resources[key]; ok && old != resource {
			metrics.StrandedCapacity.DeleteLabelValues(key, old)
		}
		metrics.StrandedCapacity.WithLabelValues(key, resource).Set(float64(stranded))
		q.resources[key] = resource
	}
}

// ForgetStaleKeys deletes every series of the topology keys no planning recorded for
// keyRetention (GC): tenant-chosen keys and resource names do not pile up as series.
func (q *Tracker) ForgetStaleKeys(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, at := range q.seen {
		if now.Sub(at) < keyRetention {
			continue
		}
		domains := q.known[key]
		delete(q.known, key)
		for d := range domains {
			q.forgetDomain(key, d)
		}
		metrics.LargestPlaceableGang.DeleteLabelValues(key)
		if r, ok := q.resources[key]; ok {
			metrics.StrandedCapacity.DeleteLabelValues(key, r)
			delete(q.resources, key)
		}
		delete(q.seen, key)
		delete(q.rooms, key)
	}
}

// Pending is planning's event for a gang that found no domain with room: its need is
// remembered under key until it binds (Bound) or has no pending members left (PrunePending).
func (q *Tracker) Pending(key, gangKey string, need int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.pending[key]
	if !ok {
		m = map[string]int{}
		q.pending[key] = m
	}
	m[gangKey] = need
}

// Bound is PostBind's event: a gang whose member binds is no longer pending.
func (q *Tracker) Bound(gangKey string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, m := range q.pending {
		delete(m, gangKey)
		if len(m) == 0 {
			delete(q.pending, key)
		}
	}
}

// SmallestNeed is the smallest need among the gang being planned and the gangs pending with
// "no domain has room" under key. Only pending gangs with a smaller need than the best so far
// can change the answer, so only those are checked for live unbound members, smallest first;
// checked gangs without any are forgotten (PrunePending forgets the rest). With hundreds of
// gangs pending, checking every one on every planning made each PreFilter scan them all.
func (q *Tracker) SmallestNeed(key, gangKey string, need int, pending func(gangKey string) bool) int {
	q.mu.Lock()
	var smaller []pendingGang
	for g, n := range q.pending[key] {
		if g != gangKey && n < need {
			smaller = append(smaller, pendingGang{key, g, n})
		}
	}
	q.mu.Unlock()
	sort.Slice(smaller, func(i, j int) bool {
		if smaller[i].need != smaller[j].need {
			return smaller[i].need < smaller[j].need
		}
		return smaller[i].gang < smaller[j].gang
	})
	for _, c := range smaller {
		if pending(c.gang) {
			return c.need
		}
		q.forget(key, c.gang, c.need)
	}
	return need
}

// pendingGang is one entry of Tracker.pending, copied out of the lock.
type pendingGang struct {
	key, gang string
	need      int
}

// forget drops a pending gang if it is still pending with that need.
func (q *Tracker) forget(key, gangKey string, need int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if m := q.pending[key]; m != nil && m[gangKey] == need {
		delete(m, gangKey)
		if len(m) == 0 {
			delete(q.pending, key)
		}
	}
}

// PrunePending forgets pending gangs without live unbound members (GC).
func (q *Tracker) PrunePending(pending func(gangKey string) bool) {
	q.mu.Lock()
	var all []pendingGang
	for key, m := range q.pending {
		for g, n := range m {
			all = append(all, pendingGang{key, g, n})
		}
	}
	q.mu.Unlock()
	for _, c := range all {
		if !pending(c.gang) {
			q.forget(c.key, c.gang, c.need)
		}
	}
}

// StrandedUnits sums the free units of the domains whose room is below threshold.
func StrandedUnits(rooms map[string]int, free map[string]int64, threshold int) int64 {
	var sum int64
	for d, r := range rooms {
		if r < threshold {
			sum += free[d]
		}
	}
	return sum
}

// PlacementOutcome is single_domain when every member's domain is the pinned domain (which is
// never empty), else split.
func PlacementOutcome(placed map[string]string, pinned string) string {
	if pinned == "" {
		return metrics.OutcomeSplit
	}
	for _, d := range placed {
		if d != pinned {
			return metrics.OutcomeSplit
		}
	}
	return metrics.OutcomeSingleDomain
}

// NthCreated returns the creation time of the n-th oldest live pod, or of the
// newest live pod when fewer than n exist; ok is false without live pods.
func NthCreated(pods []*v1.Pod, n int) (time.Time, bool) {
	var ts []time.Time
	for _, p := range pods {
		if gang.Live(p) {
			ts = append(ts, p.CreationTimestamp.Time)
		}
	}
	if len(ts) == 0 {
		return time.Time{}, false
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	if n < 1 {
		n = 1
	}
	if n > len(ts) {
		n = len(ts)
	}
	return ts[n-1], true
}

// FormationSeconds is now − start in seconds, never negative (clock skew between the API
// server, which stamps creationTimestamp with one-second resolution, and the scheduler).
func FormationSeconds(start, now time.Time) float64 {
	if d := now.Sub(start).Seconds(); d > 0 {
		return d
	}
	return 0
}
