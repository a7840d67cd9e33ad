package gangpack

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
	"math"
	"reflect"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

func countSplitRefused() { metrics.PlacementTotal.WithLabelValues(metrics.OutcomeSplitRefused).Inc() }

// qualityTracker remembers which per-domain series exist and which gangs are pending.
type qualityTracker struct {
	mu sync.Mutex
	// known: topology key → domain → member room of the latest planning over all nodes (the
	// member_room series, set only when they change).
	known map[string]map[string]int
	// held: the domains held at the last refresh. Every known domain has a held series (1 when
	// held, else 0), and so has every held domain.
	held map[placement.DomainRef]struct{}
	// parked: topology key → gang key → need, for gangs parked with "no domain has room".
	parked map[string]map[string]int
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

func newQualityTracker() *qualityTracker {
	return &qualityTracker{
		known:     map[string]map[string]int{},
		held:      map[placement.DomainRef]struct{}{},
		parked:    map[string]map[string]int{},
		resources: map[string]string{},
		seen:      map[string]time.Time{},
		rooms:     map[string]map[string]int{},
	}
}

// refreshHeld sets domain_held from the pin store.
func (q *qualityTracker) refreshHeld(store heldDomains) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refreshHeldLocked(store)
}

// refreshHeldLocked follows the store's held domains: a domain that became held gets 1, one
// that stopped being held gets 0 while it is known and loses its series otherwise. It touches
// only the domains whose state changed: it runs on every pin, drain and release.
func (q *qualityTracker) refreshHeldLocked(store heldDomains) {
	now := map[placement.DomainRef]struct{}{}
	for _, ref := range store.HeldDomainRefs() {
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
func (q *qualityTracker) unheld(ref placement.DomainRef) {
	if _, known := q.known[ref.Key][ref.Value]; known {
		metrics.DomainHeld.WithLabelValues(ref.Key, ref.Value).Set(0)
		return
	}
	metrics.DomainHeld.DeleteLabelValues(ref.Key, ref.Value)
}

// forgetDomain drops the series of a domain that left the known set, unless it is held.
func (q *qualityTracker) forgetDomain(key, d string) {
	metrics.DomainMemberRoom.DeleteLabelValues(key, d)
	if _, held := q.held[placement.DomainRef{Key: key, Value: d}]; !held {
		metrics.DomainHeld.DeleteLabelValues(key, d)
	}
}

// recordQuality sets member_room, largest_placeable_gang and stranded_capacity for the gang's
// topology key from one planning over all nodes.
func (p *planner) recordQuality(nodes []topology.Node) {
	resource, hasResource := primaryResource(p.gang.Shapes)
	var free map[string]int64
	if hasResource {
		free = freeUnits(nodes, resource)
	}
	p.recordQualityOf(memberRooms(&p.gang, nodes), free, resource, hasResource)
}

// recordQualityOf sets the gauges from each domain's member room and free units.
func (p *planner) recordQualityOf(rooms map[string]int, free map[string]int64, resource string, hasResource bool) {
	key := p.info.TopologyKey
	_, largest, _ := topology.Largest(rooms)
	var stranded int64
	if hasResource {
		threshold := p.pl.quality.smallestNeed(key, p.info.Key, p.need, p.pl.gangPending)
		stranded = strandedUnits(rooms, free, threshold)
	}
	p.pl.quality.record(p.pl.ledger, key, rooms, largest, resource, hasResource, stranded)
}

// record sets the gauges of one planning over all nodes under key, deletes the member_room
// series of domains that planning no longer saw, and refreshes the held series.
func (q *qualityTracker) record(store heldDomains, key string, rooms map[string]int, largest int, resource string, hasResource bool, stranded int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sameMap(rooms, q.rooms[key]) { // the plan cache's planning of last time: series unchanged
		q.finishRecord(store, key, largest, resource, hasResource, stranded)
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
	q.finishRecord(store, key, largest, resource, hasResource, stranded)
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]int) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// finishRecord sets the per-key gauges of a planning and refreshes the held series.
func (q *qualityTracker) finishRecord(store heldDomains, key string, largest int, resource string, hasResource bool, stranded int64) {
	q.seen[key] = time.Now()
	metrics.LargestPlaceableGang.WithLabelValues(key).Set(float64(largest))
	if hasResource {
		if old, ok := q.resources[key]; ok && old != resource {
			metrics.StrandedCapacity.DeleteLabelValues(key, old)
		}
		metrics.StrandedCapacity.WithLabelValues(key, resource).Set(float64(stranded))
		q.resources[key] = resource
	}
	q.refreshHeldLocked(store)
}

// forgetStaleKeys deletes every series of the topology keys no planning recorded for
// keyRetention (GC): tenant-chosen keys and resource names do not pile up as series.
func (q *qualityTracker) forgetStaleKeys(store heldDomains, now time.Time) {
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
	q.refreshHeldLocked(store)
}

// recordPending records the gang as pending after "no domain has room".
func (p *planner) recordPending() {
	p.pl.quality.park(p.info.TopologyKey, p.info.Key, p.need)
}

func (q *qualityTracker) park(key, gang string, need int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.parked[key]
	if !ok {
		m = map[string]int{}
		q.parked[key] = m
	}
	m[gang] = need
}

// memberBound is the PostBind hook: a gang whose member binds is no longer pending.
func (gs *GangPack) memberBound(pod *v1.Pod) {
	if gang, _, ok := gang.Of(pod); ok {
		gs.quality.unpark(gang)
	}
}

func (q *qualityTracker) unpark(gang string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, m := range q.parked {
		delete(m, gang)
		if len(m) == 0 {
			delete(q.parked, key)
		}
	}
}

// smallestNeed is the smallest need among the gang being planned and the gangs parked with
// "no domain has room" under key. Only parked gangs with a smaller need than the best so far can change the
// answer, so only those are checked for live unbound members, smallest first; checked gangs
// without any are forgotten (pruneParked forgets the rest). With hundreds of gangs parked,
// checking every one on every planning made each PreFilter scan them all.
func (q *qualityTracker) smallestNeed(key, gang string, need int, pending func(gang string) bool) int {
	q.mu.Lock()
	var smaller []parkedGang
	for g, n := range q.parked[key] {
		if g != gang && n < need {
			smaller = append(smaller, parkedGang{key, g, n})
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

// parkedGang is one entry of qualityTracker.parked, copied out of the lock.
type parkedGang struct {
	key, gang string
	need      int
}

// forget drops a parked gang if it is still parked with that need.
func (q *qualityTracker) forget(key, gang string, need int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if m := q.parked[key]; m != nil && m[gang] == need {
		delete(m, gang)
		if len(m) == 0 {
			delete(q.parked, key)
		}
	}
}

// pruneParked forgets parked gangs without live unbound members (GC).
func (q *qualityTracker) pruneParked(pending func(gang string) bool) {
	q.mu.Lock()
	var all []parkedGang
	for key, m := range q.parked {
		for g, n := range m {
			all = append(all, parkedGang{key, g, n})
		}
	}
	q.mu.Unlock()
	for _, c := range all {
		if !pending(c.gang) {
			q.forget(c.key, c.gang, c.need)
		}
	}
}

// gangPending reports whether the gang still has live unbound members (true when unknown).
func (gs *GangPack) gangPending(gang string) bool {
	ns, name, _ := cache.SplitMetaNamespaceKey(gang)
	pods, err := gs.members.LiveUnbound(ns, name, "")
	return err != nil || len(pods) > 0
}

// memberRooms is, per domain, the sum over its nodes of the node's member room (topology.NodeRoom)
// with no per-node cap at the gang's need, and without the "can the whole gang
// form here" condition of the planner's room: how many members of this gang's shape the
// domain's nodes can take.
func memberRooms(g *topology.Gang, nodes []topology.Node) map[string]int {
	uncapped := *g
	uncapped.Need = math.MaxInt32
	out := map[string]int{}
	for i := range nodes {
		n := &nodes[i]
		if n.Domain == "" {
			continue
		}
		out[n.Domain] += topology.NodeRoom(&uncapped, n)
	}
	return out
}

// primaryResource returns the extended resource with the largest per-member request among
// the shapes (ties by name); ok is false when no shape requests an extended resource.
func primaryResource(shapes []topology.Resources) (string, bool) {
	best, bestQ := "", int64(0)
	for _, s := range shapes {
		for r, q := range s {
			if q <= 0 || !v1helper.IsExtendedResourceName(v1.ResourceName(r)) {
				continue
			}
			if q > bestQ || (q == bestQ && r < best) {
				best, bestQ = r, q
			}
		}
	}
	return best, best != ""
}

// freeUnits sums allocatable − requested of resource (clamped at 0 per node) per domain.
func freeUnits(nodes []topology.Node, resource string) map[string]int64 {
	out := map[string]int64{}
	for i := range nodes {
		n := &nodes[i]
		if n.Domain == "" {
			continue
		}
		if f := n.Free[resource]; f > 0 {
			out[n.Domain] += f
		} else if _, ok := out[n.Domain]; !ok {
			out[n.Domain] = 0
		}
	}
	return out
}

// strandedUnits sums the free units of the domains whose room is below threshold.
func strandedUnits(rooms map[string]int, free map[string]int64, threshold int) int64 {
	var sum int64
	for d, r := range rooms {
		if r < threshold {
			sum += free[d]
		}
	}
	return sum
}

// heldDomains is the pin store's one reading the gauges need: the domains forming gangs hold.
type heldDomains interface {
	HeldDomainRefs() []placement.DomainRef
}
