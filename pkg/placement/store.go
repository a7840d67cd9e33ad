// Package placement keeps OMEGangPack's pins: which gang is committed to which domain, and the
// member room a forming gang reserves there (which nodes, how many members each). Other gangs
// and pods may use whatever lies outside every reservation; no two gangs ever count the same
// free slot. Every read-modify operation is atomic under one mutex. It has no Kubernetes
// dependencies.
package placement

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// DomainRef identifies a domain: a topology key and one of its values.
type DomainRef struct {
	Key   string
	Value string
}

// Commitment is a gang's pin.
type Commitment struct {
	Gang   string // gang key {ns}/{name}
	Key    string // topology key
	Domain string // domain value
	Owner  string // PodGroup UID
	ID     uint64 // attempt id
	// Reserved is the member room the forming gang holds: one slot per node of its plan,
	// consumed as members pass Reserve. Empty once committed.
	Reserved  Reservation
	Remaining int
	SoleFit   bool
	// MinMember is the gang size the commitment was planned for: a PodGroup whose minMember
	// changes while the gang forms makes the commitment stale.
	MinMember int
	// Within is the group domain a placement-group partner was pinned inside (zero for a
	// gang of its own): its members and reservation stay on the nodes of Domain that also
	// carry Within, whatever other group domains share the value Domain.
	Within DomainRef
	// Resumed marks a pin made from the nominations a previous leader left on the gang's
	// pending members (a failover): its reservation keeps a slot on each pending member's
	// nominated node.
	Resumed bool
}

// Forming reports whether the gang still forms (and so may hold reserved room).
func (c *Commitment) Forming() bool { return c.Remaining > 0 }

// clone returns a copy that shares nothing with the store.
func (c *Commitment) clone() Commitment {
	out := *c
	out.Reserved = c.Reserved.clone()
	return out
}

// Store is the pin store.
type Store struct {
	mu     sync.Mutex
	nextID uint64
	pins   map[string]*Commitment
	// aggregates over forming commitments
	byNode      map[string]map[string]struct{} // node → gangs with a slot there
	heldDomains map[DomainRef]int              // domain → forming commitments in it
	heldKeys    map[string]int                 // topology key → forming commitments under it
	forming     atomic.Int64                   // forming commitments, read without the lock
	// generation counts hold lifts (reserved room given back: releases of forming
	// commitments, drains to 0, smaller reservations): a caller that parks a pod because of
	// a reservation compares it before and after parking, so room given back in between is
	// never missed.
	generation atomic.Uint64
	onChange   func()
}

// SetOnChange installs the hook run after every change of the pins (a new commitment, a
// drain to 0, a release). It runs outside the store lock, so it may read the store.
func (s *Store) SetOnChange(f func()) {
	s.mu.Lock()
	s.onChange = f
	s.mu.Unlock()
}

// changed runs the change hook; callers do not hold s.mu.
func (s *Store) changed() {
	s.mu.Lock()
	f := s.onChange
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// Generation returns the number of hold lifts so far. It takes no lock: Filter reads it for
// every node.
func (s *Store) Generation() uint64 { return s.generation.Load() }

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		pins:        map[string]*Commitment{},
		byNode:      map[string]map[string]struct{}{},
		heldDomains: map[DomainRef]int{},
		heldKeys:    map[string]int{},
	}
}

func (s *Store) hold(c *Commitment) {
	s.index(c)
	s.heldDomains[DomainRef{c.Key, c.Domain}]++
	s.heldKeys[c.Key]++
	s.forming.Add(1)
}

// unhold ends a forming commitment's hold: its remaining slots return to everyone.
func (s *Store) unhold(c *Commitment) {
	s.unindex(c)
	c.Reserved = nil
	s.undoHold(c)
	s.generation.Add(1)
}

func (s *Store) add(c *Commitment) Commitment {
	s.nextID++
	c.ID = s.nextID
	c.Reserved = c.Reserved.clone()
	if !c.Forming() {
		c.Reserved = nil
	}
	s.pins[c.Gang] = c
	if c.Forming() {
		s.hold(c)
	}
	return c.clone()
}

// Get returns a copy of the gang's commitment.
func (s *Store) Get(gang string) (Commitment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	if !ok {
		return Commitment{}, false
	}
	return c.clone(), true
}

// Has reports whether the gang has a commitment, forming or committed.
func (s *Store) Has(gang string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pins[gang]
	return ok
}

// Forming reports whether the gang has a commitment that is still forming.
func (s *Store) Forming(gang string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	return ok && c.Forming()
}

// Len returns the number of commitments, forming or committed.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pins)
}

// List returns copies of all commitments, sorted by gang key.
func (s *Store) List() []Commitment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Commitment, 0, len(s.pins))
	for _, c := range s.pins {
		out = append(out, c.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gang < out[j].Gang })
	return out
}

// DrainResult reports a drain.
type DrainResult struct {
	// Owned is false when id no longer owns the gang's commitment.
	Owned bool
	// Committed is true when this drain brought remaining to 0.
	Committed bool
	Remaining int
	// GaveBack is true when reserved room returned to everyone: the drain committed (the hold
	// lifted) or it consumed a slot of another node than the member's (that node's room is
	// free again). Pods refused because of the reservation may fit now.
	GaveBack bool
}

// Drain decrements remaining of the gang's commitment if id still owns it and it is forming:
// a member passed Reserve on node, so one slot of the reservation is consumed (see consume).
// Reaching 0 lifts the hold.
func (s *Store) Drain(gang string, id uint64, node string) DrainResult {
	r := s.drain(gang, id, node)
	if r.Committed {
		s.changed()
	}
	return r
}

func (s *Store) drain(gang string, id uint64, node string) DrainResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	if !ok || c.ID != id {
		return DrainResult{}
	}
	if c.Remaining == 0 {
		return DrainResult{Owned: true}
	}
	c.Remaining--
	moved := s.consume(c, node)
	if c.Remaining == 0 {
		s.unhold(c)
		return DrainResult{Owned: true, Committed: true, GaveBack: true}
	}
	return DrainResult{Owned: true, Remaining: c.Remaining, GaveBack: moved}
}

// Committed reports whether id owns the gang's commitment, and whether it is committed
// (remaining 0).
func (s *Store) Committed(gang string, id uint64) (owned, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	if !ok || c.ID != id {
		return false, false
	}
	return true, c.Remaining == 0
}

// AnyID makes Release drop the commitment whatever its attempt id.
const AnyID uint64 = 0

// Release deletes the gang's commitment if id owns it (or id is AnyID). onRelease, when not
// nil, runs under the store lock with the released commitment, before anyone can pin again.
func (s *Store) Release(gang string, id uint64, onRelease func(Commitment)) (Commitment, bool) {
	c, ok := s.releaseIf(gang, id, nil, onRelease)
	if ok {
		s.changed()
	}
	return c, ok
}

// releaseIf drops the gang's commitment if id owns it (or is AnyID) and cond, when not nil,
// holds for it; both are checked under the lock.
func (s *Store) releaseIf(gang string, id uint64, cond func(*Commitment) bool, onRelease func(Commitment)) (Commitment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	if !ok || (id != AnyID && c.ID != id) || (cond != nil && !cond(c)) {
		return Commitment{}, false
	}
	delete(s.pins, gang)
	if c.Forming() {
		s.unhold(c)
	}
	if onRelease != nil {
		onRelease(c.clone())
	}
	return c.clone(), true
}

// Expire releases the gang's commitment if id owns it and it is still forming: a hold that
// outlived its deadline ends, a committed gang is left alone. onRelease is as for Release.
func (s *Store) Expire(gang string, id uint64, onRelease func(Commitment)) (Commitment, bool) {
	c, released := s.releaseIf(gang, id, (*Commitment).Forming, onRelease)
	if released {
		s.changed()
	}
	return c, released
}

// FormingWithPrefix counts the forming commitments whose gang key starts with prefix, other
// than gang's own.
func (s *Store) FormingWithPrefix(prefix, gang string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for g, c := range s.pins {
		if g != gang && c.Forming() && strings.HasPrefix(g, prefix) {
			n++
		}
	}
	return n
}

// HeldKeys returns the topology keys under which forming gangs hold domains, sorted; nil
// when there are none.
func (s *Store) HeldKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.heldKeys))
}

// HeldDomains returns the number of domains currently held by forming gangs.
func (s *Store) HeldDomains() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heldDomains)
}

// HeldDomainRefs returns the domains currently held by forming gangs, sorted by key then
// value; nil when there are none.
func (s *Store) HeldDomainRefs() []DomainRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.SortedFunc(maps.Keys(s.heldDomains), func(a, b DomainRef) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value))
	})
}
