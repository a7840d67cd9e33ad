package ledger

import (
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// Nominations a previous leader left (docs/design.md §12). While this replica has not
// scheduled anything yet (a standby, or a process that just started), the pod informer's
// events record every gang whose pending members carry status.nominatedNodeName: the members
// the previous leader had waiting at Permit (kube-scheduler publishes their node there), or
// nominated for preemption. The replica's first PreFilter takes them all, once, and resumes
// those whose nominations still hold, before anything plans. From then on nothing is
// recorded: the nominations the replica sees are its own, made for gangs it has pinned (or
// unwound on purpose).

// NominationSeen is what the gang's PodGroup said when one of its members was last
// nominated; the zero value means unknown (the PodGroup was not readable then).
type NominationSeen struct {
	UID         string
	TopologyKey string
	MinMember   int
}

// Nominated is a gang whose pending members a previous leader nominated.
type Nominated struct {
	Key  string
	Seen NominationSeen
}

type nominatedGang struct {
	pods map[types.UID]struct{}
	seen NominationSeen
}

// nominees are the gangs recorded so far, until the first PreFilter takes them.
type nominees struct {
	// taken is set once the first PreFilter took the gangs; read without the lock by every
	// PreFilter after that.
	taken atomic.Bool
	mu    sync.Mutex
	gangs map[string]*nominatedGang
}

func newNominees() *nominees { return &nominees{gangs: map[string]*nominatedGang{}} }

// RecordsNominations reports whether pod events should still be recorded as a previous
// leader's nominations: the replica has not scheduled anything yet.
func (l *Ledger) RecordsNominations() bool {
	return !l.active.Load() && !l.nominees.taken.Load()
}

// Nominee records a pending member of the gang that carries a nomination. seen, when known,
// replaces what was recorded when the member was nominated anew (renominated) or nothing
// was known yet.
func (l *Ledger) Nominee(key string, uid types.UID, seen NominationSeen, renominated bool) {
	n := l.nominees
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken.Load() || l.active.Load() {
		return
	}
	g, ok := n.gangs[key]
	if !ok {
		g = &nominatedGang{pods: map[types.UID]struct{}{}}
		n.gangs[key] = g
	}
	g.pods[uid] = struct{}{}
	if seen != (NominationSeen{}) && (renominated || g.seen == (NominationSeen{})) {
		g.seen = seen
	}
}

// NotNominee forgets a member that no longer carries a nomination, is bound, gone or no
// longer live; a gang without nominated members is forgotten.
func (l *Ledger) NotNominee(key string, uid types.UID) {
	n := l.nominees
	n.mu.Lock()
	defer n.mu.Unlock()
	g, ok := n.gangs[key]
	if !ok {
		return
	}
	delete(g.pods, uid)
	if len(g.pods) == 0 {
		delete(n.gangs, key)
	}
}

// TakeNominated returns the recorded gangs, sorted by key, the first time it is called on an
// active ledger, and nothing ever after.
func (l *Ledger) TakeNominated() []Nominated {
	n := l.nominees
	if !l.active.Load() || n.taken.Load() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken.Swap(true) {
		return nil
	}
	out := make([]Nominated, 0, len(n.gangs))
	for k, g := range n.gangs {
		out = append(out, Nominated{Key: k, Seen: g.seen})
	}
	n.gangs = nil
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
