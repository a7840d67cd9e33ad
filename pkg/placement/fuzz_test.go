package placement_test

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

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
