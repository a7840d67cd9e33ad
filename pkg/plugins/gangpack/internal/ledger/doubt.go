package ledger

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// maxDoubt bounds how long a node stays in doubt when no event about the pod arrives.
const maxDoubt = 30 * time.Second

// bindsInDoubt remembers the nodes of pods whose binding failed after Permit admitted them.
// A bind request may reach the API server although the scheduler saw an error (a cut
// connection): the scheduler's cache then forgets the pod while the node holds it, and the
// next pod could be placed on the same room. Until the pod informer shows the bind's outcome
// (the pod bound, deleted or replaced) or maxDoubt passes, no other pod may use that node.
type bindsInDoubt struct {
	mu       sync.Mutex
	admitted map[types.UID]struct{} // past Permit, not yet bound or unreserved
	byNode   map[string]map[types.UID]time.Time
	nodeOf   map[types.UID]string
	// doubts mirrors len(nodeOf), so Filter skips the lock while nothing is in doubt.
	doubts atomic.Int64
}

func newBindsInDoubt() *bindsInDoubt {
	return &bindsInDoubt{admitted: map[types.UID]struct{}{}, byNode: map[string]map[types.UID]time.Time{}, nodeOf: map[types.UID]string{}}
}

// admit records that Permit let the pod go on to binding.
func (b *bindsInDoubt) admit(uid types.UID) {
	b.mu.Lock()
	b.admitted[uid] = struct{}{}
	b.mu.Unlock()
}

// isAdmitted reports whether Permit admitted the pod and it has neither bound nor failed yet.
func (b *bindsInDoubt) isAdmitted(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.admitted[uid]
	return ok
}

// bound forgets an admitted pod that bound.
func (b *bindsInDoubt) bound(uid types.UID) {
	b.mu.Lock()
	delete(b.admitted, uid)
	b.mu.Unlock()
}

// unreserved is called for every Unreserve: an admitted pod failed in binding, so its node
// is in doubt. It reports whether it was.
func (b *bindsInDoubt) unreserved(uid types.UID, node string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.admitted[uid]; !ok {
		return false
	}
	delete(b.admitted, uid)
	if b.byNode[node] == nil {
		b.byNode[node] = map[types.UID]time.Time{}
	}
	b.byNode[node][uid] = now
	b.nodeOf[uid] = node
	b.doubts.Store(int64(len(b.nodeOf)))
	return true
}

// resolve ends the doubt about a pod (its bind outcome is known, or maxDoubt passed); it
// reports whether there was one.
func (b *bindsInDoubt) resolve(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	node, ok := b.nodeOf[uid]
	if ok {
		b.forgetLocked(uid, node)
	}
	return ok
}

// forgetLocked drops the doubt about uid on node; callers hold b.mu.
func (b *bindsInDoubt) forgetLocked(uid types.UID, node string) {
	delete(b.nodeOf, uid)
	delete(b.byNode[node], uid)
	if len(b.byNode[node]) == 0 {
		delete(b.byNode, node)
	}
	b.doubts.Store(int64(len(b.nodeOf)))
}

// blocks reports whether node is in doubt for a pod other than uid.
func (b *bindsInDoubt) blocks(node string, uid types.UID, now time.Time) bool {
	if b.doubts.Load() == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for other, since := range b.byNode[node] {
		if other != uid && now.Sub(since) < maxDoubt {
			return true
		}
	}
	return false
}

// prune forgets doubts older than maxDoubt (GC) and reports whether it forgot any.
func (b *bindsInDoubt) prune(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	pruned := false
	for uid, node := range b.nodeOf {
		if now.Sub(b.byNode[node][uid]) >= maxDoubt {
			b.forgetLocked(uid, node)
			pruned = true
		}
	}
	return pruned
}

// WatchDoubts ends a doubt when the pod informer shows the bind's outcome, and wakes the pods
// refused meanwhile.
func (l *Ledger) WatchDoubts(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(l.doubtEvents())
	return err
}

// doubtEvents is the pod event handler of the doubts; it also forgets a bound pod's
// reserved-node record (placedMembers reads the informer's node from then on). Only an event that shows the outcome of
// the bind ends a doubt: the pod bound (spec.nodeName set), deleted, or replaced by a pod of
// another UID. Any other update (a status patch, the nominatedNodeName patch sent before the
// bind) may have been written before the bind request reached the API server, so it proves
// nothing; the doubt then lasts until maxDoubt. The same outcomes end a standalone preemptor's
// protection (endProtection).
func (l *Ledger) doubtEvents() cache.ResourceEventHandlerFuncs {
	return gang.Changes(func(old, cur *v1.Pod) {
		switch {
		case old == nil: // added, or not a pod: no doubt to end
		case cur == nil || old.UID != cur.UID:
			l.endDoubt(old.UID)
			l.endProtection(old.UID)
		case cur.Spec.NodeName != "":
			l.reserved.forget(cur.UID) // the informer shows the node from here on
			l.endDoubt(cur.UID)
			l.endProtection(cur.UID)
		}
	})
}

// doubtBegan starts the timer that ends the pod's doubt at maxDoubt: refused pods are woken
// then, even when no event about the pod arrives.
func (l *Ledger) doubtBegan(uid types.UID) {
	l.doubtTimers.start(uid, l.now().Add(maxDoubt), maxDoubt, l.after, func() {
		if l.doubts.resolve(uid) {
			l.wakeBlocked(l.logger)
		}
	})
}

// endDoubt ends the doubt about the pod, if any, and wakes the pods refused meanwhile.
func (l *Ledger) endDoubt(uid types.UID) {
	l.doubtTimers.stop(uid)
	if l.doubts.resolve(uid) {
		l.wakeBlocked(l.logger)
	}
}
