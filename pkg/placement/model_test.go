package placement_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The fuzzed cluster: six nodes partitioned two ways, so that gangs pinned under different
// keys reserve on the same nodes.
//
//	key "zone": a = {a0,a1,a2}, b = {b0,b1,b2}
//	key "rack": r0 = {a0,b0}, r1 = {a1,b1}, r2 = {a2,b2}
var (
	fuzzNodes   = []string{"a0", "a1", "a2", "b0", "b1", "b2"}
	fuzzKeys    = []string{"zone", "rack"}
	fuzzDomains = map[string]map[string][]string{
		"zone": {"a": {"a0", "a1", "a2"}, "b": {"b0", "b1", "b2"}},
		"rack": {"r0": {"a0", "b0"}, "r1": {"a1", "b1"}, "r2": {"a2", "b2"}},
	}
	// fuzzAlloc is every node's room while nothing runs.
	fuzzAlloc = cluster{
		"a0": {free: topology.Resources{gpu: 8, cpu: 4}, pods: 4},
		"a1": {free: topology.Resources{gpu: 8, cpu: 2}, pods: 3},
		"a2": {free: topology.Resources{gpu: 4, cpu: 4}, pods: 2},
		"b0": {free: topology.Resources{gpu: 8, cpu: 8}, pods: 4},
		"b1": {free: topology.Resources{gpu: 2, cpu: 4}, pods: 4},
		"b2": {free: topology.Resources{cpu: 8}, pods: 3},
	}
	fuzzGangs  = []string{"ns/g0", "ns/g1", "ns/g2", "ns/g3"}
	fuzzOwners = []string{"u0", "u1"}
	// fuzzShapes is each gang's member request.
	fuzzShapes = map[string]topology.Resources{
		"ns/g0": {gpu: 4},
		"ns/g1": {gpu: 1, cpu: 1},
		"ns/g2": {gpu: 2},
		"ns/g3": {cpu: 2},
	}
)

type fuzzBytes struct {
	b []byte
	i int
}

func (s *fuzzBytes) more() bool { return s.i < len(s.b) }

func (s *fuzzBytes) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	v := s.b[s.i]
	s.i++
	return int(v)
}

// occupant is a pod that uses a node's room: a gang member that passed Reserve or any other
// pod the filters let through.
type occupant struct {
	node string
	req  topology.Resources
}

// model is the reference the store is compared with: the commitments, and the cluster's
// free room as running pods leave it.
type model struct {
	pins      map[string]placement.Commitment
	lastID    uint64
	free      cluster
	occupants []occupant
}

// record adds a commitment the store has just made: its id must be above every earlier one.
func (m *model) record(t *testing.T, where string, c placement.Commitment) {
	t.Helper()
	if c.ID <= m.lastID {
		t.Fatalf("%s: new id %d not above %d", where, c.ID, m.lastID)
	}
	m.lastID = c.ID
	m.pins[c.Gang] = c
}

func newModel() *model {
	m := &model{pins: map[string]placement.Commitment{}, free: cluster{}}
	for n, r := range fuzzAlloc {
		m.free[n] = room{free: cloneRes(r.free), pods: r.pods}
	}
	return m
}

// cloneRes copies r; a nil r gives an empty map, as the model's free room is written to.
func cloneRes(r topology.Resources) topology.Resources {
	if r == nil {
		return topology.Resources{}
	}
	return maps.Clone(r)
}

func cloneReservation(r placement.Reservation) placement.Reservation {
	if r == nil {
		return nil
	}
	out := placement.Reservation{}
	for n, sl := range r {
		out[n] = placement.Slot{Count: sl.Count, Each: cloneRes(sl.Each)}
	}
	return out
}

// reservedOn sums the forming gangs' slots on node, except's left out, in the store's form
// once normalized (see normReserved).
func (m *model) reservedOn(node, except string) placement.Reserved {
	var out placement.Reserved
	for _, g := range fuzzGangs { // sorted
		c, ok := m.pins[g]
		sl := c.Reserved[node]
		if !ok || g == except || !c.Forming() || sl.Count <= 0 {
			continue
		}
		if out.Resources == nil {
			out.Resources = topology.Resources{}
		}
		for name, q := range sl.Each {
			out.Resources[name] += q * int64(sl.Count)
		}
		out.Pods += int64(sl.Count)
		out.Gangs = append(out.Gangs, g)
	}
	return normReserved(out)
}

// normReserved drops zero sums and empty slices, which the store may or may not keep.
func normReserved(r placement.Reserved) placement.Reserved {
	var res topology.Resources
	for name, q := range r.Resources {
		if q != 0 {
			if res == nil {
				res = topology.Resources{}
			}
			res[name] = q
		}
	}
	r.Resources = res
	if len(r.Gangs) == 0 {
		r.Gangs = nil
	}
	return r
}

// leaves reports whether req fits node's free room outside r.
func (m *model) leaves(node string, r placement.Reserved, req topology.Resources) bool {
	f := m.free[node]
	if f.pods-r.Pods < 1 {
		return false
	}
	for name, q := range req {
		if q > 0 && f.free[name]-r.Resources[name] < q {
			return false
		}
	}
	return true
}

// fits is the store's rule, restated: on each node of res, res and every other forming gang's
// slots together stay within the node's free room.
func (m *model) fits(gang string, res placement.Reservation) bool {
	for n, sl := range res {
		if sl.Count <= 0 {
			continue
		}
		f, ok := m.free[n]
		if !ok {
			return false
		}
		r := m.reservedOn(n, gang)
		total := cloneRes(r.Resources)
		for name, q := range sl.Each {
			total[name] += q * int64(sl.Count)
		}
		if r.Pods+int64(sl.Count) > f.pods {
			return false
		}
		for name, q := range total {
			if q > 0 && q > f.free[name] {
				return false
			}
		}
	}
	return true
}

// members is how many members of shape fit on node outside the other gangs' reservations
// (or outside none when stale: a room counted before those gangs reserved).
func (m *model) members(gang, node string, shape topology.Resources, stale bool) int {
	f := m.free[node]
	var r placement.Reserved
	if !stale {
		r = m.reservedOn(node, gang)
	}
	k := f.pods - r.Pods
	for name, q := range shape {
		if q > 0 {
			k = min(k, (f.free[name]-r.Resources[name])/q)
		}
	}
	return int(max(k, 0))
}

// plan is the reservation a caller would make for need members of gang in domain nodes ns.
// Variants 0, 1 and 4 fit, unless another gang's reservation gets in the way; the others are
// deliberately wrong so that the store has to refuse them when they do not fit:
//
//	0: greedy over the nodes in name order
//	1: greedy, starting at node rot
//	2: greedy over a stale view that ignores the other gangs' reservations
//	3: every member on node rot
//	4: greedy with one GPU more per member than the shape asks
//	5: greedy, but one member on a node the capacity does not know
func (m *model) plan(gang string, ns []string, need, variant, rot int) placement.Reservation {
	shape := fuzzShapes[gang]
	each := cloneRes(shape)
	if variant == 4 {
		each[gpu]++
	}
	res := placement.Reservation{}
	if variant == 5 && need > 0 {
		res["ghost"] = placement.Slot{Count: 1, Each: cloneRes(each)}
		need--
	}
	if variant == 3 {
		if need > 0 {
			res[ns[rot%len(ns)]] = placement.Slot{Count: need, Each: each}
		}
		return res
	}
	start := 0
	if variant == 1 {
		start = rot % len(ns)
	}
	for i := range ns {
		if need == 0 {
			break
		}
		n := ns[(start+i)%len(ns)]
		k := min(m.members(gang, n, each, variant == 2), need)
		if k > 0 {
			res[n] = placement.Slot{Count: k, Each: cloneRes(each)}
			need -= k
		}
	}
	return res
}

// rooms is the member room per domain of key as the caller counts it.
func (m *model) rooms(gang, key string, stale bool) map[string]int {
	out := map[string]int{}
	for d, ns := range fuzzDomains[key] {
		for _, n := range ns {
			out[d] += m.members(gang, n, fuzzShapes[gang], stale)
		}
	}
	return out
}

// occupy makes a pod use room on node; unoccupy lets the i-th pod go.
func (m *model) occupy(node string, req topology.Resources) {
	f := m.free[node]
	f.free = cloneRes(f.free)
	for name, q := range req {
		f.free[name] -= q
	}
	f.pods--
	m.free[node] = f
	m.occupants = append(m.occupants, occupant{node, req})
}

func (m *model) unoccupy(i int) {
	o := m.occupants[i]
	m.occupants = append(m.occupants[:i], m.occupants[i+1:]...)
	f := m.free[o.node]
	f.free = cloneRes(f.free)
	for name, q := range o.req {
		f.free[name] += q
	}
	f.pods++
	m.free[o.node] = f
}

// consume is the store's drain rule, restated: the node's slot, else one on the node with
// the most members (ties by name). It reports whether a slot elsewhere was given back.
func consume(c *placement.Commitment, node string) bool {
	take := func(n string) {
		sl := c.Reserved[n]
		sl.Count--
		if sl.Count > 0 {
			c.Reserved[n] = sl
		} else {
			delete(c.Reserved, n)
		}
	}
	if c.Reserved[node].Count > 0 {
		take(node)
		return false
	}
	best, most := "", 0
	for _, n := range slices.Sorted(maps.Keys(c.Reserved)) {
		if c.Reserved[n].Count > most {
			best, most = n, c.Reserved[n].Count
		}
	}
	if most == 0 {
		return false
	}
	take(best)
	return true
}

// givesBack reports whether res holds less than old on some node: fewer pod slots, or less
// of a resource.
func givesBack(old, res placement.Reservation) bool {
	for n, o := range old {
		if o.Count <= 0 {
			continue
		}
		sl := res[n]
		if sl.Count < o.Count {
			return true
		}
		for name, q := range o.Each {
			if q*int64(o.Count) > sl.Each[name]*int64(sl.Count) {
				return true
			}
		}
	}
	return false
}

func refBestFit(rooms map[string]int, size int) (string, bool) {
	best, found := "", false
	for d, r := range rooms {
		if size <= 0 || r < size {
			continue
		}
		if !found || r < rooms[best] || (r == rooms[best] && d < best) {
			best, found = d, true
		}
	}
	return best, found
}
