package placement

import (
	"sort"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Slot is one node's share of a reservation: Count members, each taking Each of the node's
// free resources and one pod slot.
type Slot struct {
	Count int
	Each  topology.Resources
}

// Reservation is the member room a forming gang reserves: node name → slot.
type Reservation map[string]Slot

// Members returns how many members the reservation holds room for.
func (r Reservation) Members() int {
	n := 0
	for _, s := range r {
		n += s.Count
	}
	return n
}

func (r Reservation) clone() Reservation {
	if r == nil {
		return nil
	}
	out := make(Reservation, len(r))
	for n, s := range r {
		if s.Each != nil {
			each := make(topology.Resources, len(s.Each))
			for name, q := range s.Each {
				each[name] = q
			}
			s.Each = each
		}
		out[n] = s
	}
	return out
}

// givesBack reports whether slot next holds less of the node than old: fewer pod slots, or
// less of some resource in total.
func givesBack(old, next Slot) bool {
	if old.Count <= 0 {
		return false
	}
	if next.Count < old.Count {
		return true
	}
	for name, q := range old.Each {
		if q*int64(old.Count) > next.Each[name]*int64(next.Count) {
			return true
		}
	}
	return false
}

// Capacity reports what a node has free as the caller's snapshot sees it (allocatable minus
// requested, and free pod slots); ok is false for an unknown node.
type Capacity func(node string) (free topology.Resources, freePods int64, ok bool)

// Reserved is what forming gangs hold on one node.
type Reserved struct {
	Resources topology.Resources
	Pods      int64
	Gangs     []string // sorted
}

// add adds a slot to the sum.
func (r *Reserved) add(gang string, s Slot) {
	if r.Resources == nil {
		r.Resources = topology.Resources{}
	}
	for name, q := range s.Each {
		r.Resources[name] += q * int64(s.Count)
	}
	r.Pods += int64(s.Count)
	r.Gangs = append(r.Gangs, gang)
}

// Leaves reports whether a pod requesting req still fits a node with free resources and
// freePods pod slots once this reserved room is set aside.
func (r *Reserved) Leaves(free topology.Resources, freePods int64, req topology.Resources) bool {
	if freePods-r.Pods < 1 {
		return false
	}
	for name, q := range req {
		if q > 0 && free[name]-r.Resources[name] < q {
			return false
		}
	}
	return true
}

// index records the commitment's slots in the per-node index. Callers hold s.mu.
func (s *Store) index(c *Commitment) {
	for n, sl := range c.Reserved {
		if sl.Count <= 0 {
			continue
		}
		if s.byNode[n] == nil {
			s.byNode[n] = map[string]struct{}{}
		}
		s.byNode[n][c.Gang] = struct{}{}
	}
}

// unindex removes the commitment's slots from the per-node index. Callers hold s.mu.
func (s *Store) unindex(c *Commitment) {
	for n := range c.Reserved {
		if gs := s.byNode[n]; gs != nil {
			delete(gs, c.Gang)
			if len(gs) == 0 {
				delete(s.byNode, n)
			}
		}
	}
}

// reservedOn sums the slots other gangs than except hold on node. Callers hold s.mu.
func (s *Store) reservedOn(node, except string) Reserved {
	var out Reserved
	for g := range s.byNode[node] {
		if g == except {
			continue
		}
		if c := s.pins[g]; c != nil && c.Forming() {
			out.add(g, c.Reserved[node])
		}
	}
	sort.Strings(out.Gangs)
	return out
}

// fits reports whether res fits next to every other gang's reservation within the nodes'
// capacity: the store's invariant that no two gangs count the same free slot. Callers hold
// s.mu.
func (s *Store) fits(gang string, res Reservation, capacity Capacity) bool {
	for n, sl := range res {
		if sl.Count <= 0 {
			continue
		}
		if capacity == nil {
			return false
		}
		free, freePods, ok := capacity(n)
		if !ok {
			return false
		}
		sum := s.reservedOn(n, gang)
		sum.add(gang, sl)
		if sum.Pods > freePods {
			return false
		}
		for name, q := range sum.Resources {
			if q > 0 && q > free[name] {
				return false
			}
		}
	}
	return true
}

// ReservedOn returns what gangs other than except reserve on node. It takes no lock while
// no gang is forming, so Filter pays nothing then.
func (s *Store) ReservedOn(node, except string) Reserved {
	if s.forming.Load() == 0 {
		return Reserved{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reservedOn(node, except)
}

// ReservedExcept returns, per node, what forming gangs other than gang reserve: planning sets
// it aside before it counts room.
func (s *Store) ReservedExcept(gang string) map[string]Reserved {
	if s.forming.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Reserved, len(s.byNode))
	for n := range s.byNode {
		if r := s.reservedOn(n, gang); len(r.Gangs) > 0 {
			out[n] = r
		}
	}
	return out
}

// Reserve replaces the reservation of the gang's forming commitment when id owns it and the
// new one fits next to every other gang's, and reports whether it did. A reservation that
// gives room back lifts a hold (the generation moves) and reports gaveBack, so the caller wakes
// the pods refused because of it.
func (s *Store) Reserve(gang string, id uint64, res Reservation, capacity Capacity) (ok, gaveBack bool) {
	s.mu.Lock()
	c, ok := s.pins[gang]
	if !ok || c.ID != id || !c.Forming() || !s.fits(gang, res, capacity) {
		s.mu.Unlock()
		return false, false
	}
	shrank := false
	for n, old := range c.Reserved {
		if givesBack(old, res[n]) {
			shrank = true
		}
	}
	s.unindex(c)
	c.Reserved = res.clone()
	s.index(c)
	if shrank {
		s.generation.Add(1)
	}
	s.mu.Unlock()
	return true, shrank
}

// consume takes one member's slot out of the reservation when a member passes Reserve on
// node: that node's slot if it has one, else one on the node with the most reserved members
// (ties by name), whose room then returns to everyone; it reports that move. Callers hold s.mu.
func (s *Store) consume(c *Commitment, node string) (moved bool) {
	if sl, ok := c.Reserved[node]; ok && sl.Count > 0 {
		s.take(c, node)
		return false
	}
	best, most := "", 0
	for n, sl := range c.Reserved {
		if sl.Count > most || (sl.Count == most && sl.Count > 0 && n < best) {
			best, most = n, sl.Count
		}
	}
	if most > 0 {
		s.take(c, best)
		s.generation.Add(1)
		return true
	}
	return false
}

// take removes one member from the node's slot. Callers hold s.mu.
func (s *Store) take(c *Commitment, node string) {
	sl := c.Reserved[node]
	sl.Count--
	if sl.Count > 0 {
		c.Reserved[node] = sl
		return
	}
	delete(c.Reserved, node)
	if gs := s.byNode[node]; gs != nil {
		delete(gs, c.Gang)
		if len(gs) == 0 {
			delete(s.byNode, node)
		}
	}
}
