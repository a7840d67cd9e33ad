package preempt

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// victimRef identifies one evicted pod.
type victimRef struct {
	namespace, name string
	uid             types.UID
	node            string // the node it occupied when evicted
}

// preemptRecord is one preemption a gang (or standalone pod) made and now waits on.
type preemptRecord struct {
	domain  string
	node    string // the nominated node
	victims []victimRef
	// A standalone preemptor's nominated node is protected from lower-priority gangs'
	// planning while the preemptor is pending, until protectUntil: pod is the preemptor,
	// request what it needs on the node, priority its priority. pod.uid is empty for a gang,
	// which holds its domain in the store instead.
	pod          victimRef
	request      topology.Resources
	priority     int32
	protectUntil time.Time
	// nominee is a gang preemptor's member nominated to node (its gang in gang), with request
	// and priority as above: while the victims terminate, kube-scheduler's Filter counts that
	// pending member on the node against every pod of equal or lower priority.
	nominee victimRef
	gang    string
}

// preemptions remembers, per preemptor (gang key, group unit or "pod/" + UID), the victims it
// evicted, so it does not preempt again while they terminate. A record lasts while a victim
// still holds room (victimHolds) or, for a standalone preemptor, while it protects the node.
type preemptions struct {
	mu sync.Mutex
	m  map[string]preemptRecord
}

func newPreemptions() *preemptions { return &preemptions{m: map[string]preemptRecord{}} }

// record remembers a preemption and drops the records live no longer keeps. It runs in a
// scheduling cycle (live may read the snapshot), and every preemption prunes the records of
// the earlier ones.
func (p *preemptions) record(key string, r preemptRecord, live func(preemptRecord) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, old := range p.m {
		if !live(old) {
			delete(p.m, k)
		}
	}
	p.m[key] = r
}

// get returns the preemptor's record.
func (p *preemptions) get(key string) (preemptRecord, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[key]
	return r, ok
}

// all returns every record.
func (p *preemptions) all() map[string]preemptRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]preemptRecord, len(p.m))
	for k, r := range p.m {
		out[k] = r
	}
	return out
}

// victimsLeft counts the record's victims that still hold room.
func (e *Evaluator) victimsLeft(r preemptRecord) int {
	now, left := e.now(), 0
	for _, v := range r.victims {
		if e.victimHolds(v, now) {
			left++
		}
	}
	return left
}

// victimHolds reports whether the victim still occupies its node: the pod informer shows it
// (same UID) bound, or the scheduling snapshot still counts it on its node, unless it is
// stuck Terminating past its bound (then its room is not waited for). The informer learns of
// a deletion before the snapshot does; a cycle whose snapshot still holds the victim sees its
// domain without room, and the record must last until the snapshot agrees, or that cycle
// would take the missing room for a reason to preempt elsewhere. A victim that was only
// waiting at Permit is rejected, not deleted: it stays in the informer unbound and holds
// nothing once rejected, so the preemptor does not wait on it.
func (e *Evaluator) victimHolds(v victimRef, now time.Time) bool {
	if cur := e.boundVictim(v); cur != nil {
		return !gang.Stuck(cur, now)
	}
	q := e.inSnapshot(v)
	return q != nil && !gang.Stuck(q, now)
}

// boundVictim returns the victim as the pod informer shows it bound, or nil.
func (e *Evaluator) boundVictim(v victimRef) *v1.Pod {
	cur, err := e.members.Pods(v.namespace).Get(v.name)
	if err != nil || cur.UID != v.uid || cur.Spec.NodeName == "" {
		return nil
	}
	return cur
}

// placedAgain drops the pod from every record's victims. A victim rejected while it waited at
// Permit stays in the API; once a scheduling cycle of its own reserves it again, it is a new
// placement (possibly with new partners), which no preemptor waits on or evicts again alone.
// A victim allowed at the moment it was rejected binds without another Reserve and stays a
// victim (evictEscaped).
func (p *preemptions) placedAgain(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, r := range p.m {
		if i := slices.IndexFunc(r.victims, func(v victimRef) bool { return v.uid == uid }); i >= 0 {
			r.victims = slices.Delete(slices.Clone(r.victims), i, i+1)
			p.m[k] = r
		}
	}
}

// inSnapshot returns the victim as the current scheduling snapshot counts it on its node, or
// nil.
func (e *Evaluator) inSnapshot(v victimRef) *v1.Pod {
	if v.node == "" || e.handle == nil {
		return nil
	}
	ni, err := e.handle.SnapshotSharedLister().NodeInfos().Get(v.node)
	if err != nil || ni == nil {
		return nil
	}
	for _, p := range ni.GetPods() {
		if q := p.GetPod(); q.UID == v.uid {
			return q
		}
	}
	return nil
}

// protects reports whether a standalone preemptor's record still protects its node: the
// preemptor is pending and the bound has not passed.
func (e *Evaluator) protects(r preemptRecord, now time.Time) bool {
	return r.pod.uid != "" && r.node != "" && now.Before(r.protectUntil) &&
		e.members.Pending(r.pod.namespace, r.pod.name, r.pod.uid)
}

// podRecordKey is the preemptions record's key of a standalone preemptor.
func podRecordKey(pod *v1.Pod) string { return "pod/" + gang.PodKey(pod) }

// Protecting reports whether the standalone pod (same UID) has a preemption record that
// protects its nominated node. The record outlives the pod's binding until a later preemption
// prunes it, so the pod's addition as an assigned pod tells the protection just ended.
func (e *Evaluator) Protecting(pod *v1.Pod) bool {
	r, ok := e.preempted.get(podRecordKey(pod))
	return ok && r.node != "" && r.pod.uid == pod.UID
}

// Nominates reports whether the pod's nominatedNodeName is the node its own preemption
// nominated and that room is still the pod's own: the victims still terminate there, or, for
// a standalone preemptor, the record still protects the node. A gang member's nomination
// ends with its victims: the gang's hold keeps the room from then on, and a nomination
// beside the hold would count the member twice. Any other nomination is stale.
func (e *Evaluator) Nominates(pod *v1.Pod) bool {
	keys := []string{podRecordKey(pod)}
	if key, _, member := gang.Of(pod); member {
		keys = []string{key}
		if unitOf := e.iface.UnitOf(); unitOf != nil {
			if g := unitOf(pod); g != "" {
				keys = append(keys, g)
			}
		}
	}
	for _, k := range keys {
		r, ok := e.preempted.get(k)
		if !ok || r.node == "" || r.node != pod.Status.NominatedNodeName {
			continue
		}
		if e.victimsLeft(r) > 0 || (r.pod.uid == pod.UID && e.protects(r, e.now())) {
			return true
		}
	}
	return false
}

// recordLive reports whether a record is still needed: a victim still holds room, or it
// protects a standalone preemptor's node.
func (e *Evaluator) recordLive(r preemptRecord) bool {
	return e.victimsLeft(r) > 0 || e.protects(r, e.now())
}

// awaitingVictims reports whether the preemptor (key) evicted victims for domain that still
// hold room.
func (e *Evaluator) awaitingVictims(key, domain string) bool {
	r, ok := e.preempted.get(key)
	return ok && r.domain == domain && e.victimsLeft(r) > 0
}

// withProtected adds to others (what other gangs reserve per node, a map the caller owns)
// the room that preemptors' nominated pods hold, for the gang own of priority (asked only
// when some record counts) at most theirs: as kube-scheduler's Filter counts a nominated pod
// of equal or higher priority on its node (framework.go:1195-1217 in v1.35.4), the gang's
// planning does not count that room as its own. Those are the standalone preemptors whose
// record protects their node, and the nominated members of other gangs' preemptions whose
// victims still terminate, unless their gang's reservation on the node already holds them.
// It returns others, or a new map when others is nil.
func (e *Evaluator) withProtected(own string, others map[string]placement.Reserved, priority func() int32, now time.Time) map[string]placement.Reserved {
	known, prio := false, int32(0)
	for key, r := range e.preempted.all() {
		if !e.nominationHolds(own, r, others, now) {
			continue
		}
		if !known {
			prio, known = priority(), true
		}
		if r.priority < prio {
			continue
		}
		if others == nil {
			others = map[string]placement.Reserved{}
		}
		cur := others[r.node]
		res := topology.Resources{}
		for k, q := range cur.Resources {
			res[k] = q
		}
		for k, q := range r.request {
			res[k] += q
		}
		gangs := append(append([]string(nil), cur.Gangs...), key)
		slices.Sort(gangs)
		others[r.node] = placement.Reserved{Resources: res, Pods: cur.Pods + 1, Gangs: gangs}
	}
	return others
}

// nominationHolds reports whether the record's nominated pod holds room on its node for the
// planning of gang own: a standalone preemptor while its record protects the node; another
// gang's nominated member while it is pending there, the victims still terminate and its
// gang's reservation does not cover the node.
func (e *Evaluator) nominationHolds(own string, r preemptRecord, others map[string]placement.Reserved, now time.Time) bool {
	if r.pod.uid != "" {
		return e.protects(r, now)
	}
	if r.nominee.uid == "" || r.node == "" || r.gang == own {
		return false
	}
	if _, covered := slices.BinarySearch(others[r.node].Gangs, r.gang); covered {
		return false
	}
	p, err := e.members.Pods(r.nominee.namespace).Get(r.nominee.name)
	if err != nil || p.UID != r.nominee.uid || p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.NominatedNodeName != r.node {
		return false
	}
	return e.victimsLeft(r) > 0
}

// evictedMemory is how long a victim whose eviction call succeeded is not evicted again: far
// longer than the pod informer takes to show it Terminating or gone.
const evictedMemory = 10 * time.Minute

// evictions tracks the victims whose eviction calls are under way, and those whose call
// succeeded lately: until the pod informer shows such a victim Terminating, it still looks
// bound, and evicting it again would only repeat the call and its Preempted event.
type evictions struct {
	mu      sync.Mutex
	set     sets.Set[types.UID]
	evicted map[types.UID]time.Time
}

func newEvictions() *evictions {
	return &evictions{set: sets.New[types.UID](), evicted: map[types.UID]time.Time{}}
}

// start marks the victim's eviction under way; false when it already is, or when a call
// evicted it within evictedMemory of now.
func (e *evictions) start(uid types.UID, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for u, at := range e.evicted {
		if now.Sub(at) >= evictedMemory {
			delete(e.evicted, u)
		}
	}
	if _, recent := e.evicted[uid]; recent || e.set.Has(uid) {
		return false
	}
	e.set.Insert(uid)
	return true
}

// done ends the victim's eviction call; evicted says it succeeded at now.
func (e *evictions) done(uid types.UID, evicted bool, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set.Delete(uid)
	if evicted {
		e.evicted[uid] = now
	}
}

// inFlight is how many evictions are under way.
func (e *evictions) inFlight() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.set.Len()
}
