package placement_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
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

// FuzzStore drives the store through random sequences of Choose, Pin, Drain, Reserve,
// Release, Expire and Committed on four gangs of a six-node cluster, while other pods come
// and go where the reservations leave room, and compares every result with the model. After
// each step it checks the store's invariant: on every node the forming gangs' reservations
// together fit the node's current free room, so no two gangs count the same slot; and a
// committed gang reserves nothing, no gang reserves more members than it still needs,
// ReservedOn/ReservedExcept/HeldDomainRefs/HeldKeys follow the model, the generation moves
// exactly when reserved room is given back, and the change hook runs once per change.
func FuzzStore(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(runStoreModel)
}

// step encodes one fuzz step: op, gang, a = owner | key<<1 | variant<<2, b, then the op's own
// bytes (Choose: rot; Pin: remaining+1, rot; Drain: node index; Reserve: rot). b is the need
// (1+b%4) for Choose, the domain for Pin, and picks the attempt id (0: the current one) for
// Drain, Reserve, Release, Expire and Committed.
func step(op, gang, owner, key, variant, b int, own ...int) []byte {
	out := []byte{byte(op), byte(gang), byte(owner | key<<1 | variant<<2), byte(b)}
	for _, v := range own {
		out = append(out, byte(v))
	}
	return out
}

// pod encodes another pod arriving (a: its request, b: its node) or one leaving (b).
func pod(op, a, b int) []byte { return []byte{byte(op), 0, byte(a), byte(b)} }

func steps(s ...[]byte) []byte { return bytes.Join(s, nil) }

const (
	zone, rackKey         = 0, 1
	g0, g1, g2, g3        = 0, 1, 2, 3
	current, stale, anyID = 0, 3, 4
)

var fuzzSeeds = [][]byte{
	{},
	// Two gangs of 3 reserve in zone a next to each other (g0 on a0 a1, g2 on a1 a2); g1's
	// reservation on a0's GPUs is refused, its greedy one on a2 pinned: three gangs in one
	// domain. g0's release gives its room back; a member of g2 lands on a0, outside its
	// slots, and one of a1's slots comes back.
	steps(
		step(opChoose, g0, 0, zone, 0, 2, 0),
		step(opChoose, g2, 0, zone, 0, 2, 0),
		step(opPin, g1, 0, zone, 3, 0, 2, 0),
		step(opPin, g1, 0, zone, 0, 0, 2, 0),
		step(opRelease, g0, 0, zone, 0, current),
		step(opDrain, g2, 0, zone, 0, current, 1),
	),
	// Drains: on the member's own slot, elsewhere (a slot of a0 comes back), pods arriving
	// next to the reservation, the last drain commits.
	steps(
		step(opChoose, g0, 0, zone, 0, 2, 0),
		step(opDrain, g0, 0, zone, 0, current, 1),
		step(opDrain, g0, 0, zone, 0, current, 3),
		pod(opPodArrives, 2, 1),
		pod(opPodArrives, 2, 0),
		step(opDrain, g0, 0, zone, 0, current, 1),
		pod(opPodLeaves, 0, 0),
	),
	// Reserve: moving members gives room back, so does a bigger member size on fewer nodes;
	// the concentrated plan fits; a stale id and an unknown node are refused.
	steps(
		step(opPin, g2, 0, zone, 0, 1, 4, 0),
		step(opReserve, g2, 0, zone, 1, current, 1),
		step(opReserve, g2, 0, zone, 4, current, 0),
		step(opChoose, g0, 0, zone, 0, 0, 0),
		step(opReserve, g0, 0, zone, 3, current, 1),
		step(opReserve, g2, 0, zone, 3, current, 0),
		step(opReserve, g2, 0, zone, 2, stale, 0),
		step(opReserve, g2, 0, zone, 5, current, 0),
	),
	// A committed adoption whose reservation would not fit; Expire ends only a forming
	// commitment; Release with AnyID ends a committed one without giving room back.
	steps(
		step(opChoose, g0, 0, zone, 0, 2, 0),
		step(opPin, g1, 0, zone, 3, 0, 1, 0),
		step(opPin, g1, 1, zone, 0, 1, 3, 0),
		step(opExpire, g0, 0, zone, 0, stale),
		step(opExpire, g1, 0, zone, 0, current),
		step(opExpire, g0, 0, zone, 0, current),
		step(opRelease, g1, 0, zone, 0, anyID),
		step(opCommitted, g1, 0, zone, 0, current),
	),
	// Keys sharing nodes: g0 reserves two of a0's pod slots under rack r0, g3's plan for
	// zone a with all four members on a0 conflicts, its greedy plan fills a0's slots; a pod
	// finds a0 full until g0's members are placed.
	steps(
		step(opPin, g0, 0, rackKey, 0, 0, 3, 0),
		step(opChoose, g3, 0, zone, 3, 3, 0),
		step(opChoose, g3, 0, zone, 0, 3, 0),
		pod(opPodArrives, 0, 0),
		step(opDrain, g0, 0, rackKey, 0, current, 1),
		pod(opPodArrives, 0, 0),
		step(opDrain, g0, 0, rackKey, 0, current, 0),
		pod(opPodArrives, 0, 0),
	),
}

const (
	opChoose = iota
	opPin
	opDrain
	opReserve
	opRelease
	opExpire
	opCommitted
	opPodArrives
	opPodLeaves
	numOps
)

func runStoreModel(t *testing.T, data []byte) {
	s := placement.NewStore()
	changes := 0
	s.SetOnChange(func() { changes++ })
	m := newModel()
	src := &fuzzBytes{b: data}
	for step := 0; src.more() && step < 64; step++ {
		op := src.next() % numOps
		gang := fuzzGangs[src.next()%len(fuzzGangs)]
		a, b := src.next(), src.next()
		owner := fuzzOwners[a%2]
		key := fuzzKeys[(a>>1)%2]
		variant := (a >> 2) % 6
		names := slices.Sorted(maps.Keys(fuzzDomains[key]))
		cur, pinned := m.pins[gang]
		// pickID: the gang's current id (half the time), a stale id, AnyID or a never-issued id.
		pickID := func(v int) uint64 {
			switch v % 6 {
			case 0, 1, 2:
				if pinned {
					return cur.ID
				}
				return m.lastID
			case 3:
				if pinned && cur.ID > 1 {
					return cur.ID - 1
				}
				return m.lastID + 7
			case 4:
				return placement.AnyID
			default:
				return m.lastID + 1
			}
		}
		where := fmt.Sprintf("step %d op %d gang %s a %d b %d", step, op, gang, a, b)
		gen, changed := s.Generation(), changes
		wantMoved, wantChanged := false, false

		switch op {
		case opChoose:
			need := 1 + b%4
			rot := src.next()
			rooms := m.rooms(gang, key, variant == 2)
			var asked []string
			res := s.Choose(placement.ChooseRequest{Gang: gang, Owner: owner, Key: key, Need: need, MinMember: need + 1,
				Rooms: rooms, Capacity: m.free.capacity(),
				Reserve: func(d string) placement.Reservation {
					asked = append(asked, d)
					return m.plan(gang, fuzzDomains[key][d], need, variant, rot)
				}})
			if pinned {
				if !res.Existing || res.OK != (cur.Owner == owner) || res.Conflict || !reflect.DeepEqual(res.Commitment, cur) || len(asked) != 0 {
					t.Fatalf("%s: Choose on pinned gang = %+v; model %+v owner %s", where, res, cur, owner)
				}
				break
			}
			best, ok := refBestFit(rooms, need)
			if !ok {
				if res.OK || res.Existing || res.Conflict || len(asked) != 0 {
					t.Fatalf("%s: Choose = %+v; model: no fitting domain in %v", where, res, rooms)
				}
				break
			}
			if !reflect.DeepEqual(asked, []string{best}) {
				t.Fatalf("%s: Choose asked for reservations in %v; model best fit %s of %v", where, asked, best, rooms)
			}
			plan := m.plan(gang, fuzzDomains[key][best], need, variant, rot)
			if !m.fits(gang, plan) {
				if res.OK || res.Existing || !res.Conflict {
					t.Fatalf("%s: Choose = %+v; model: %v does not fit next to the others (rooms %v)", where, res, plan, rooms)
				}
				break
			}
			want := placement.Commitment{Gang: gang, Key: key, Domain: best, Owner: owner, ID: res.Commitment.ID,
				Reserved: plan, Remaining: need, SoleFit: topology.CountFitting(rooms, need) < 2, MinMember: need + 1}
			if !res.OK || res.Existing || res.Conflict || !reflect.DeepEqual(res.Commitment, want) {
				t.Fatalf("%s: Choose = %+v; model %+v", where, res, want)
			}
			m.record(t, where, want)
			wantChanged = true

		case opPin:
			d := names[b%len(names)]
			rem := src.next()%5 - 1
			rot := src.next()
			plan := m.plan(gang, fuzzDomains[key][d], max(rem, 1), variant, rot)
			c, out := s.Pin(placement.PinRequest{Gang: gang, Owner: owner, Key: key, Domain: d, Reserved: plan,
				Capacity: m.free.capacity(), Remaining: rem, SoleFit: rem%2 == 0, MinMember: 3})
			switch {
			case pinned:
				if out != placement.AlreadyPinned || !reflect.DeepEqual(c, cur) {
					t.Fatalf("%s: Pin = %+v,%v; model AlreadyPinned %+v", where, c, out, cur)
				}
			case rem > 0 && !m.fits(gang, plan):
				if out != placement.HeldByOther || !reflect.DeepEqual(c, placement.Commitment{}) {
					t.Fatalf("%s: Pin(%v) = %+v,%v; model HeldByOther", where, plan, c, out)
				}
			default:
				want := placement.Commitment{Gang: gang, Key: key, Domain: d, Owner: owner, ID: c.ID,
					Remaining: max(rem, 0), SoleFit: rem%2 == 0, MinMember: 3}
				if rem > 0 {
					want.Reserved = cloneReservation(plan)
				}
				if out != placement.Pinned || !reflect.DeepEqual(c, want) {
					t.Fatalf("%s: Pin = %+v,%v; model Pinned %+v", where, c, out, want)
				}
				m.record(t, where, want)
				wantChanged = true
			}

		case opDrain:
			id := pickID(b)
			// Where the member may land, as the filters decide: a node of its own slots, or a
			// node of its domain with room outside the other gangs' reservations; "" is a
			// node outside the model.
			nodes := []string{""}
			if pinned {
				for _, n := range fuzzDomains[cur.Key][cur.Domain] {
					if cur.Reserved[n].Count > 0 || m.leaves(n, m.reservedOn(n, gang), fuzzShapes[gang]) {
						nodes = append(nodes, n)
					}
				}
			} else {
				nodes = append(nodes, fuzzNodes...)
			}
			node := nodes[src.next()%len(nodes)]
			r := s.Drain(gang, id, node)
			var want placement.DrainResult
			if pinned && cur.ID == id {
				want.Owned = true
				if cur.Forming() {
					cur.Remaining--
					wantMoved = consume(&cur, node)
					if node != "" {
						m.occupy(node, fuzzShapes[gang])
					}
					if cur.Remaining == 0 {
						cur.Reserved = nil
						want.Committed, wantMoved, wantChanged = true, true, true
					}
					want.Remaining, want.GaveBack = cur.Remaining, wantMoved
					m.pins[gang] = cur
				}
			}
			if r != want {
				t.Fatalf("%s: Drain(%d, %q) = %+v; model %+v", where, id, node, r, want)
			}

		case opReserve:
			id := pickID(b)
			rot := src.next()
			need := 1 + b%3
			ns := fuzzNodes
			if pinned {
				need = cur.Remaining
				ns = fuzzDomains[cur.Key][cur.Domain]
			}
			plan := m.plan(gang, ns, need, variant, rot)
			ok, gaveBack := s.Reserve(gang, id, plan, m.free.capacity())
			wantOK := pinned && cur.ID == id && cur.Forming() && m.fits(gang, plan)
			if ok != wantOK {
				t.Fatalf("%s: Reserve(%d, %v) = %v; model %v", where, id, plan, ok, wantOK)
			}
			if ok && gaveBack != givesBack(cur.Reserved, plan) {
				t.Fatalf("%s: Reserve(%d, %v) gave back %v; model %v", where, id, plan, gaveBack, !gaveBack)
			}
			if ok {
				wantMoved = givesBack(cur.Reserved, plan)
				cur.Reserved = cloneReservation(plan)
				m.pins[gang] = cur
			}

		case opRelease, opExpire:
			id := pickID(b)
			before := s.List()
			calls := 0
			var seen placement.Commitment
			cb := func(rc placement.Commitment) { calls++; seen = rc }
			var c placement.Commitment
			var ok bool
			if op == opRelease {
				c, ok = s.Release(gang, id, cb)
			} else {
				c, ok = s.Expire(gang, id, cb)
			}
			if pinned && (id == placement.AnyID || id == cur.ID) && (op == opRelease || cur.Forming()) {
				if !ok || calls != 1 || !reflect.DeepEqual(withoutReserved(c), withoutReserved(cur)) || !reflect.DeepEqual(seen, c) {
					t.Fatalf("%s: Release/Expire(%d) = %+v,%v calls %d seen %+v; model %+v", where, id, c, ok, calls, seen, cur)
				}
				delete(m.pins, gang)
				wantMoved, wantChanged = cur.Forming(), true
			} else {
				if ok || calls != 0 || !reflect.DeepEqual(c, placement.Commitment{}) {
					t.Fatalf("%s: Release/Expire(%d) = %+v,%v calls %d; model: nothing", where, id, c, ok, calls)
				}
				if after := s.List(); !reflect.DeepEqual(before, after) {
					t.Fatalf("%s: a refused Release/Expire(%d) changed the store\n%+v\n%+v", where, id, before, after)
				}
			}

		case opCommitted:
			id := pickID(b)
			o, cm := s.Committed(gang, id)
			wo := pinned && cur.ID == id
			wc := wo && cur.Remaining == 0
			if o != wo || cm != wc {
				t.Fatalf("%s: Committed(%d) = %v,%v; model %v,%v", where, id, o, cm, wo, wc)
			}

		case opPodArrives:
			// Another pod asks for a node; the filters let it through only where it fits
			// outside every gang's reservation.
			node := fuzzNodes[b%len(fuzzNodes)]
			req := topology.Resources{}
			if q := a % 3; q > 0 {
				req[gpu] = int64(q)
			}
			if q := (a / 3) % 3; q > 0 {
				req[cpu] = int64(q)
			}
			got := s.ReservedOn(node, "")
			want := m.reservedOn(node, "")
			if !reflect.DeepEqual(normReserved(got), want) {
				t.Fatalf("%s: ReservedOn(%s) = %+v; model %+v", where, node, got, want)
			}
			f := m.free[node]
			fits := m.leaves(node, want, req)
			if got.Leaves(f.free, f.pods, req) != fits {
				t.Fatalf("%s: Leaves(%v, %d, %v) on %s = %v; model %v", where, f.free, f.pods, req, node, !fits, fits)
			}
			if fits {
				m.occupy(node, req)
			}

		case opPodLeaves:
			if len(m.occupants) > 0 {
				m.unoccupy(b % len(m.occupants))
			}
		}
		if moved := s.Generation() != gen; moved != wantMoved {
			t.Fatalf("%s: generation moved %v (%d → %d); model %v", where, moved, gen, s.Generation(), wantMoved)
		}
		if got := changes - changed; got != map[bool]int{false: 0, true: 1}[wantChanged] {
			t.Fatalf("%s: change hook ran %d times; model changed %v", where, got, wantChanged)
		}
		checkStore(t, where, s, m)
	}
}

// checkStore compares the whole store with the model and checks the invariants.
func checkStore(t *testing.T, where string, s *placement.Store, m *model) {
	t.Helper()
	if s.Len() != len(m.pins) {
		t.Fatalf("%s: Len = %d, model %d", where, s.Len(), len(m.pins))
	}
	list := s.List()
	var want []placement.Commitment
	held := map[placement.DomainRef]bool{}
	keys := map[string]bool{}
	for _, g := range slices.Sorted(maps.Keys(m.pins)) {
		c := m.pins[g]
		want = append(want, c)
		if c.Forming() {
			held[placement.DomainRef{Key: c.Key, Value: c.Domain}] = true
			keys[c.Key] = true
		}
	}
	if len(list) != len(want) || (len(list) > 0 && !reflect.DeepEqual(list, want)) {
		t.Fatalf("%s: List = %+v\nmodel %+v", where, list, want)
	}
	// The invariant, from the store's own commitments: on every node the forming gangs'
	// reservations together fit the node's current free room.
	sums := map[string]*placement.Reserved{}
	for _, c := range list {
		if c.Remaining < 0 {
			t.Fatalf("%s: %s has Remaining %d", where, c.Gang, c.Remaining)
		}
		if !c.Forming() && len(c.Reserved) != 0 {
			t.Fatalf("%s: committed %s reserves %v", where, c.Gang, c.Reserved)
		}
		if c.Reserved.Members() > c.Remaining {
			t.Fatalf("%s: %s reserves %d members with %d remaining", where, c.Gang, c.Reserved.Members(), c.Remaining)
		}
		if got, ok := s.Get(c.Gang); !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: Get(%s) = %+v,%v; List has %+v", where, c.Gang, got, ok, c)
		}
		for n, sl := range c.Reserved {
			if sl.Count <= 0 {
				continue
			}
			if sums[n] == nil {
				sums[n] = &placement.Reserved{Resources: topology.Resources{}}
			}
			sums[n].Pods += int64(sl.Count)
			for name, q := range sl.Each {
				sums[n].Resources[name] += q * int64(sl.Count)
			}
		}
	}
	for n, sum := range sums {
		f, ok := m.free[n]
		if !ok {
			t.Fatalf("%s: unknown node %s reserved: %+v", where, n, sum)
		}
		if sum.Pods > f.pods {
			t.Fatalf("%s: node %s: %d pod slots reserved, %d free\n%+v", where, n, sum.Pods, f.pods, list)
		}
		for name, q := range sum.Resources {
			if q > f.free[name] {
				t.Fatalf("%s: node %s: %d %s reserved, %d free\n%+v", where, n, q, name, f.free[name], list)
			}
		}
	}
	for _, n := range append([]string{"ghost"}, fuzzNodes...) {
		for _, except := range append([]string{""}, fuzzGangs...) {
			if got, want := normReserved(s.ReservedOn(n, except)), m.reservedOn(n, except); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: ReservedOn(%s, %q) = %+v; model %+v", where, n, except, got, want)
			}
		}
	}
	for _, except := range append([]string{""}, fuzzGangs...) {
		got := s.ReservedExcept(except)
		wantEx := map[string]placement.Reserved{}
		for _, n := range fuzzNodes {
			if r := m.reservedOn(n, except); len(r.Gangs) > 0 {
				wantEx[n] = r
			}
		}
		if len(got) != len(wantEx) {
			t.Fatalf("%s: ReservedExcept(%q) = %+v; model %+v", where, except, got, wantEx)
		}
		for n, r := range got {
			if !reflect.DeepEqual(normReserved(r), wantEx[n]) {
				t.Fatalf("%s: ReservedExcept(%q)[%s] = %+v; model %+v", where, except, n, r, wantEx[n])
			}
		}
	}
	refs := s.HeldDomainRefs()
	if len(refs) != len(held) || s.HeldDomains() != len(held) {
		t.Fatalf("%s: HeldDomainRefs = %v (HeldDomains %d); model %v", where, refs, s.HeldDomains(), held)
	}
	for _, r := range refs {
		if !held[r] {
			t.Fatalf("%s: HeldDomainRefs = %v; model %v", where, refs, held)
		}
	}
	if got := s.HeldKeys(); len(got) != len(keys) || (len(got) > 0 && !reflect.DeepEqual(got, slices.Sorted(maps.Keys(keys)))) {
		t.Fatalf("%s: HeldKeys = %v; model %v", where, got, keys)
	}
}

// TestStoreModel runs the fuzz body over the seeds and a fixed set of pseudo-random
// sequences, so the model check runs on every go test.
func TestStoreModel(t *testing.T) {
	for i, seed := range fuzzSeeds {
		t.Run(fmt.Sprintf("seed%d", i), func(t *testing.T) { runStoreModel(t, seed) })
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		data := make([]byte, 32+r.IntN(224))
		for j := range data {
			data[j] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprintf("random%d", i), func(t *testing.T) { runStoreModel(t, data) })
	}
}
