package ledger

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// What planning and the extension points read: pins and reservations, failed and resting
// domains, bindings in doubt, gangs waiting for members, and a gang's placed members (found
// through the reserved-node records kept here). None of the Ledger methods here writes.

// reservedNodes remembers the node each gang member was reserved on until the pod informer
// shows the member bound (or the reservation is undone), so a gang's placed members can be
// found from the gang's own pods instead of by scanning every pod of the snapshot: at 1,000
// nodes that scan was a third of PreFilter (docs/benchmarks.md).
type reservedNodes struct {
	mu sync.Mutex
	m  map[types.UID]reservedNode
}

type reservedNode struct {
	namespace, name, node string
}

func newReservedNodes() *reservedNodes { return &reservedNodes{m: map[types.UID]reservedNode{}} }

func (r *reservedNodes) set(p *v1.Pod, node string) {
	r.mu.Lock()
	r.m[p.UID] = reservedNode{namespace: p.Namespace, name: p.Name, node: node}
	r.mu.Unlock()
}

func (r *reservedNodes) get(uid types.UID) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn, ok := r.m[uid]
	return rn.node, ok
}

func (r *reservedNodes) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.m, uid)
	r.mu.Unlock()
}

// prune drops the records keep rejects (GC: members deleted while assumed).
func (r *reservedNodes) prune(keep func(namespace, name string, uid types.UID) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, rn := range r.m {
		if !keep(rn.namespace, rn.name, uid) {
			delete(r.m, uid)
		}
	}
}

func (r *reservedNodes) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// placedMembers returns the gang's live members on snapshot nodes (bound or assumed), like
// membersOnNodes over every node, but looks only at the nodes the gang's pods can be on: the
// node of each member the informer shows bound, and the reserved node of each member it does
// not. Every assumption of a member passes this plugin's Reserve, so no assumed member is
// missed; the snapshot stays the judge of what is on a node. A Terminating member is never a
// placed member (it still occupies its node, which the snapshot accounts for). It only reads:
// the record of a member the informer shows bound is forgotten by the pod event that shows
// the bind (doubtEvents), or by GC (Prune).
func (l *Ledger) placedMembers(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	pods, err := l.members.List(g.Namespace, g.Name)
	if err != nil {
		return gang.OnNodes(all, g)
	}
	names := map[string]struct{}{}
	var dead map[string]struct{}
	for _, p := range pods {
		if p.Spec.NodeName != "" { // the informer is authoritative: its reserved node is not read
			if gang.Live(p) {
				names[p.Spec.NodeName] = struct{}{}
			}
			continue
		}
		n, ok := l.reserved.get(p.UID)
		if !ok || !gang.Live(p) {
			continue
		}
		if l.deadAttempt(g.Key, p) {
			if dead == nil {
				dead = map[string]struct{}{}
			}
			dead[p.Name] = struct{}{}
			continue
		}
		names[n] = struct{}{}
	}
	if len(names) == 0 {
		return nil
	}
	// Order does not matter: findPlaced sorts by pod name, placedDomains builds a map.
	infos := l.handle.SnapshotSharedLister().NodeInfos()
	subset := make([]fwk.NodeInfo, 0, len(names))
	for n := range names {
		if ni, err := infos.Get(n); err == nil {
			subset = append(subset, ni)
		}
	}
	placed := gang.OnNodes(subset, g)
	if len(dead) == 0 {
		return placed
	}
	out := placed[:0]
	for _, m := range placed {
		if _, skip := dead[m.Pod.Name]; !skip {
			out = append(out, m)
		}
	}
	return out
}

// deadAttempt reports an assumed member whose attempt no longer owns the gang's pin and that
// Permit did not admit: it was rejected (or is about to be) and will be unreserved. Until the
// framework forgets it, it still sits on its node in the snapshot; counted as placed, it would
// let a sibling re-plan around it and bind without it.
func (l *Ledger) deadAttempt(key string, p *v1.Pod) bool {
	id, ok := l.attempts.get(gang.PodKey(p))
	if !ok || l.doubts.isAdmitted(p.UID) {
		return false
	}
	c, pinned := l.store.Get(key)
	return !pinned || c.ID != id
}

// list returns the records, sorted by namespace and name.
func (r *reservedNodes) list() []Assumed {
	r.mu.Lock()
	out := make([]Assumed, 0, len(r.m))
	for uid, rn := range r.m {
		out = append(out, Assumed{Namespace: rn.namespace, Name: rn.name, UID: uid, Node: rn.node})
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Commitment returns the gang's pin.
func (l *Ledger) Commitment(key string) (placement.Commitment, bool) { return l.store.Get(key) }

// Pinned reports whether the gang has a pin.
func (l *Ledger) Pinned(key string) bool { return l.store.Has(key) }

// Forming reports whether the gang has a pin that is still forming (not committed).
func (l *Ledger) Forming(key string) bool { return l.store.Forming(key) }

// Pins lists every pin.
func (l *Ledger) Pins() []placement.Commitment { return l.store.List() }

// Generation is the store's hold generation: it changes whenever room is given back.
func (l *Ledger) Generation() uint64 { return l.store.Generation() }

// ReservedOn is the room other forming gangs (all but except) reserve on the node.
func (l *Ledger) ReservedOn(node, except string) placement.Reserved {
	return l.store.ReservedOn(node, except)
}

// ReservedExcept is the room every forming gang but except reserves, by node.
func (l *Ledger) ReservedExcept(except string) map[string]placement.Reserved {
	return l.store.ReservedExcept(except)
}

// HeldKeys are the topology keys of the domains forming gangs hold.
func (l *Ledger) HeldKeys() []string { return l.store.HeldKeys() }

// DoubtBlocks reports whether the node is avoided because of a binding in doubt.
func (l *Ledger) DoubtBlocks(node string, uid types.UID, now time.Time) bool {
	return l.doubts.blocks(node, uid, now)
}

// Incomplete reports whether the gang waits for its members to exist.
func (l *Ledger) Incomplete(key string) bool { return l.incomplete.has(key) }

// FormingIn counts the forming pins of gangs whose key starts with prefix, but except.
func (l *Ledger) FormingIn(prefix, except string) int {
	return l.store.FormingWithPrefix(prefix, except)
}

// Failed returns the gang owner's failed domains under the key.
func (l *Ledger) Failed(o placement.GangOwner, key string) map[string]struct{} {
	return l.failed.Values(o, key)
}

// FailedHas reports whether the domain failed for the gang owner.
func (l *Ledger) FailedHas(o placement.GangOwner, d placement.DomainRef) bool {
	return l.failed.Has(o, d)
}

// Resting returns the gang owner's resting domains under the key.
func (l *Ledger) Resting(o placement.GangOwner, key string) map[string]struct{} {
	return l.failed.Resting(o, key)
}

// WaiterNodes returns the nodes the gang's unbound members waiting under attempt id were
// reserved on (none when the members cannot be listed).
func (l *Ledger) WaiterNodes(g gang.Info, id uint64) []string {
	pods, err := l.members.List(g.Namespace, g.Name)
	if err != nil {
		return nil
	}
	var out []string
	for _, q := range pods {
		if got, ok := l.attempts.get(gang.PodKey(q)); !ok || got != id || q.Spec.NodeName != "" {
			continue
		}
		if node, ok := l.reserved.get(q.UID); ok {
			out = append(out, node)
		}
	}
	return out
}

// Placed returns the gang's live members placed on the snapshot's nodes (see placedMembers).
func (l *Ledger) Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	return l.placedMembers(g, all)
}

// Read is planning's first look at a gang in a cycle, in the order planning used to ask:
// the hold generation, the other gangs' reservations, the gang's placed members, its pin,
// then its owner's failed domains and the clock. Within the cycle only planning's own
// decisions change them, and it asks again where one does (a wrapped lap).
func (l *Ledger) Read(g gang.Info, all []fwk.NodeInfo) gang.Reading {
	r := gang.Reading{Generation: l.store.Generation(), Others: l.store.ReservedExcept(g.Key), Placed: l.placedMembers(g, all),
		Failed: l.failed.Values(g.Owner(), g.TopologyKey), Now: l.now()}
	if c, ok := l.store.Get(g.Key); ok {
		r.Pin = &c
	}
	return r
}
