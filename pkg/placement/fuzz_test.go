package placement_test

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// model is the reference the fuzzer compares the store against.
type model struct {
	pins   map[string]placement.Commitment
	lastID uint64
}

func (m *model) heldByOther(gang, key, domain string, nodes []string) bool {
	for g, c := range m.pins {
		if g == gang || !c.Forming() {
			continue
		}
		if c.Key == key && c.Domain == domain {
			return true
		}
		for _, n := range nodes {
			for _, cn := range c.Nodes {
				if n == cn {
					return true
				}
			}
		}
	}
	return false
}

func (m *model) effective(gang, key string, rooms map[string]int) map[string]int {
	eff := map[string]int{}
	for d, r := range rooms {
		if r > 0 && m.heldByOther(gang, key, d, domains[key][d]) {
			r = 0
		}
		eff[d] = r
	}
	return eff
}

// holders returns the gangs holding a node with the given labels.
func (m *model) holders(node string, labels map[string]string) map[string]bool {
	out := map[string]bool{}
	for g, c := range m.pins {
		if !c.Forming() {
			continue
		}
		for _, n := range c.Nodes {
			if n == node {
				out[g] = true
			}
		}
		if v, ok := labels[c.Key]; ok && v != "" && v == c.Domain {
			out[g] = true
		}
	}
	return out
}

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

var (
	fuzzGangs  = []string{"ns/g0", "ns/g1", "ns/g2", "ns/g3"}
	fuzzOwners = []string{"u0", "u1"}
	fuzzKeys   = []string{clique, rack}
)

func domainNames(key string) []string {
	var out []string
	for d := range domains[key] {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// FuzzStore applies a random sequence of operations on a few gangs and domains and compares
// every result with a reference model; after each step it checks the invariants: forming
// holds never share a domain or a node, Remaining ≥ 0, Len/List/Get/HeldDomains/NodeHeld are
// consistent with the model, new attempt ids strictly increase, and a release with a stale
// attempt id changes nothing.
func FuzzStore(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 1, 2, 2, 2, 0, 1, 0, 0, 1, 3, 2, 2, 2})
	f.Add([]byte{0, 0, 0, 3, 4, 4, 4, 0, 1, 1, 3, 4, 4, 4, 2, 0, 0, 2, 0, 0, 2, 0, 0, 0, 1, 1, 3, 4, 4, 4})
	f.Add([]byte{1, 0, 0, 0, 3, 1, 1, 1, 1, 3, 6, 0, 1, 2, 6, 0, 5, 1, 3, 0, 3, 0, 1, 3, 0, 2})
	f.Add([]byte{0, 2, 1, 1, 4, 4, 4, 0, 3, 0, 2, 4, 4, 4, 3, 2, 1, 3, 3, 2, 2, 3, 0, 0, 4, 1, 0, 5, 1, 0, 2, 2})
	f.Add([]byte{1, 0, 4, 2, 0, 1, 2, 1, 0, 0, 2, 1, 0, 0, 2, 1, 1, 1, 5, 1, 3, 2, 3, 1, 1, 1, 2, 2, 0, 0, 4, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := placement.NewStore()
		m := &model{pins: map[string]placement.Commitment{}}
		src := &fuzzBytes{b: data}
		for step := 0; src.more() && step < 64; step++ {
			op := src.next() % 7
			gang := fuzzGangs[src.next()%len(fuzzGangs)]
			a, b := src.next(), src.next()
			owner := fuzzOwners[a%2]
			key := fuzzKeys[(a>>1)%2]
			names := domainNames(key)
			cur, pinned := m.pins[gang]
			// pickID: the gang's current id, a stale id, AnyID or a never-issued id.
			pickID := func(v int) uint64 {
				switch v % 4 {
				case 0:
					if pinned {
						return cur.ID
					}
					return m.lastID
				case 1:
					if pinned && cur.ID > 1 {
						return cur.ID - 1
					}
					return m.lastID + 7
				case 2:
					return placement.AnyID
				default:
					return m.lastID + 1
				}
			}
			where := fmt.Sprintf("step %d op %d gang %s", step, op, gang)

			switch op {
			case 0: // Choose
				need := 1 + b%3
				rooms := map[string]int{}
				for _, d := range names {
					rooms[d] = src.next() % 5
				}
				res := s.Choose(placement.ChooseRequest{Gang: gang, Owner: owner, Key: key, Need: need, Rooms: rooms, Nodes: nodesOf(key)})
				if pinned {
					if !res.Existing || res.OK != (cur.Owner == owner) || !reflect.DeepEqual(res.Commitment, cur) {
						t.Fatalf("%s: Choose on pinned gang = %+v; model %+v owner %s", where, res, cur, owner)
					}
					break
				}
				eff := m.effective(gang, key, rooms)
				if !reflect.DeepEqual(res.Effective, eff) {
					t.Fatalf("%s: Effective = %v, model %v", where, res.Effective, eff)
				}
				best, ok := refBestFit(eff, need)
				if !ok {
					if res.OK || res.Existing {
						t.Fatalf("%s: Choose pinned %+v; model: no fitting domain in %v", where, res, eff)
					}
					break
				}
				fitting := 0
				for _, r := range eff {
					if r >= need {
						fitting++
					}
				}
				want := placement.Commitment{Gang: gang, Key: key, Domain: best, Owner: owner, ID: res.Commitment.ID,
					Nodes: domains[key][best], Remaining: need, SoleFit: fitting < 2}
				if !res.OK || res.Existing || !reflect.DeepEqual(res.Commitment, want) {
					t.Fatalf("%s: Choose = %+v; model %+v", where, res, want)
				}
				if want.ID <= m.lastID {
					t.Fatalf("%s: new id %d not above %d", where, want.ID, m.lastID)
				}
				m.lastID = want.ID
				m.pins[gang] = want

			case 1: // Pin
				d := names[b%len(names)]
				nodes := domains[key][d]
				if (b/len(names))%2 == 1 {
					nodes = nodes[:1] // a partial node set (e.g. other nodes joined later)
				}
				rem := src.next()%5 - 1
				c, out := s.Pin(placement.PinRequest{Gang: gang, Owner: owner, Key: key, Domain: d, Nodes: nodes, Remaining: rem, SoleFit: rem%2 == 0})
				switch {
				case pinned:
					if out != placement.AlreadyPinned || !reflect.DeepEqual(c, cur) {
						t.Fatalf("%s: Pin = %+v,%v; model AlreadyPinned %+v", where, c, out, cur)
					}
				case m.heldByOther(gang, key, d, nodes):
					if out != placement.HeldByOther || !reflect.DeepEqual(c, placement.Commitment{}) {
						t.Fatalf("%s: Pin = %+v,%v; model HeldByOther", where, c, out)
					}
				default:
					want := placement.Commitment{Gang: gang, Key: key, Domain: d, Owner: owner, ID: c.ID,
						Nodes: append([]string(nil), nodes...), Remaining: max(rem, 0), SoleFit: rem%2 == 0}
					if out != placement.Pinned || !reflect.DeepEqual(c, want) {
						t.Fatalf("%s: Pin = %+v,%v; model Pinned %+v", where, c, out, want)
					}
					if c.ID <= m.lastID {
						t.Fatalf("%s: new id %d not above %d", where, c.ID, m.lastID)
					}
					m.lastID = c.ID
					m.pins[gang] = want
				}

			case 2: // Drain
				id := pickID(b)
				r := s.Drain(gang, id)
				var want placement.DrainResult
				if pinned && cur.ID == id {
					want.Owned = true
					if cur.Remaining > 0 {
						cur.Remaining--
						want.Committed = cur.Remaining == 0
						want.Remaining = cur.Remaining
						m.pins[gang] = cur
					}
				}
				if r != want {
					t.Fatalf("%s: Drain(%d) = %+v; model %+v", where, id, r, want)
				}

			case 3: // Release
				id := pickID(b)
				before := s.List()
				calls := 0
				var seen placement.Commitment
				c, ok := s.Release(gang, id, func(rc placement.Commitment) { calls++; seen = rc })
				if pinned && (id == placement.AnyID || id == cur.ID) {
					if !ok || calls != 1 || !reflect.DeepEqual(c, cur) || !reflect.DeepEqual(seen, cur) {
						t.Fatalf("%s: Release(%d) = %+v,%v calls %d seen %+v; model %+v", where, id, c, ok, calls, seen, cur)
					}
					delete(m.pins, gang)
				} else {
					if ok || calls != 0 || !reflect.DeepEqual(c, placement.Commitment{}) {
						t.Fatalf("%s: stale Release(%d) = %+v,%v calls %d", where, id, c, ok, calls)
					}
					if after := s.List(); !reflect.DeepEqual(before, after) {
						t.Fatalf("%s: stale Release(%d) changed the store\n%+v\n%+v", where, id, before, after)
					}
				}

			case 4: // Committed
				id := pickID(b)
				o, cm := s.Committed(gang, id)
				wo := pinned && cur.ID == id
				wc := wo && cur.Remaining == 0
				if o != wo || cm != wc {
					t.Fatalf("%s: Committed(%d) = %v,%v; model %v,%v", where, id, o, cm, wo, wc)
				}

			case 5: // Effective
				rooms := map[string]int{}
				for _, d := range names {
					rooms[d] = src.next() % 5
				}
				if got, want := s.Effective(gang, key, rooms, nodesOf(key)), m.effective(gang, key, rooms); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: Effective = %v; model %v", where, got, want)
				}

			case 6: // NodeHeld for a node that joined after the pins
				labels := map[string]string{}
				if cn := domainNames(clique); b%4 < len(cn) {
					labels[clique] = cn[b%4]
				}
				if rn := domainNames(rack); (b/4)%4 < len(rn) {
					labels[rack] = rn[(b/4)%4]
				}
				g, held := s.NodeHeld("n-new", labels)
				hs := m.holders("n-new", labels)
				if held != (len(hs) > 0) || (held && !hs[g]) || (!held && g != "") {
					t.Fatalf("%s: NodeHeld(n-new, %v) = %q,%v; model holders %v", where, labels, g, held, hs)
				}
			}
			checkStore(t, where, s, m)
		}
	})
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

// checkStore compares the whole store with the model and checks the invariants.
func checkStore(t *testing.T, where string, s *placement.Store, m *model) {
	t.Helper()
	if s.Len() != len(m.pins) {
		t.Fatalf("%s: Len = %d, model %d", where, s.Len(), len(m.pins))
	}
	list := s.List()
	var want []placement.Commitment
	forming := 0
	for _, c := range m.pins {
		want = append(want, c)
		if c.Forming() {
			forming++
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Gang < want[j].Gang })
	if len(list) != len(want) || (len(list) > 0 && !reflect.DeepEqual(list, want)) {
		t.Fatalf("%s: List = %+v\nmodel %+v", where, list, want)
	}
	for _, c := range list {
		if c.Remaining < 0 {
			t.Fatalf("%s: %s has Remaining %d", where, c.Gang, c.Remaining)
		}
		if got, ok := s.Get(c.Gang); !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: Get(%s) = %+v,%v; List has %+v", where, c.Gang, got, ok, c)
		}
	}
	if msg := checkDisjoint(list); msg != "" {
		t.Fatalf("%s: %s\n%+v", where, msg, list)
	}
	if s.HeldDomains() != forming {
		t.Fatalf("%s: HeldDomains = %d, model %d forming", where, s.HeldDomains(), forming)
	}
	for _, n := range allNodes {
		labels := labelsOf(n)
		g, held := s.NodeHeld(n, labels)
		hs := m.holders(n, labels)
		if held != (len(hs) > 0) || (held && !hs[g]) {
			t.Fatalf("%s: NodeHeld(%s) = %q,%v; model holders %v", where, n, g, held, hs)
		}
	}
}
