package gangpack

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Room reservations: a forming gang reserves the room of its plan, not its whole domain.

// scheduleOne runs one member's cycle on the first candidate no pod of the world uses yet
// and assumes it there; it returns the node and Permit's status.
func (w *world) scheduleOne(p *v1.Pod, used map[string]bool, assumedSoFar *[]*v1.Pod) (string, *fwk.Status) {
	w.t.Helper()
	c := w.mustPin(p)
	cands := c.res.NodeNames.UnsortedList()
	sort.Strings(cands)
	for _, n := range cands {
		if used[n] {
			continue
		}
		st := c.reserveOn(n)
		used[n] = true
		*assumedSoFar = append(*assumedSoFar, assumed(p, n))
		w.resnap(*assumedSoFar...)
		return n, st
	}
	w.t.Fatalf("no free candidate for %s in %v", p.Name, cands)
	return "", nil
}

// Two gangs of 4 one-GPU members into one clique of 8 one-GPU nodes, their members
// interleaved: both form at once, in disjoint room, and both are admitted.
func TestTwoGangsFormConcurrentlyInOneDomain(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 8; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
	}
	var xs, ys, pods []*v1.Pod
	for i := 0; i < 4; i++ {
		xs = append(xs, gangMember(fmt.Sprintf("x-%d", i), "x", 1))
		ys = append(ys, gangMember(fmt.Sprintf("y-%d", i), "y", 1))
	}
	pods = append(append(pods, xs...), ys...)
	w := newWorld(t, nil, nodes, pods, podGroup("x", 4), podGroup("y", 4))
	used := map[string]bool{}
	var placed []*v1.Pod
	byGang := map[string]map[string]bool{"x": {}, "y": {}}
	for i := 0; i < 4; i++ {
		for _, p := range []*v1.Pod{xs[i], ys[i]} {
			node, st := w.scheduleOne(p, used, &placed)
			byGang[p.Labels[PodGroupLabel]][node] = true
			want := fwk.Wait
			if i == 3 {
				want = fwk.Success
			}
			if st.Code() != want {
				t.Fatalf("Permit(%s on %s) = %v, want %v", p.Name, node, st, want)
			}
		}
		if i == 0 {
			x, _ := w.pl.ledger.Commitment("ns/x")
			y, _ := w.pl.ledger.Commitment("ns/y")
			if x.Domain != "a" || y.Domain != "a" || x.Reserved.Members() != 3 || y.Reserved.Members() != 3 {
				t.Fatalf("after one member each: x %+v, y %+v; want both forming in a with 3 members reserved", x, y)
			}
			for n := range x.Reserved {
				if _, ok := y.Reserved[n]; ok {
					t.Fatalf("x and y both reserve node %s", n)
				}
			}
		}
	}
	if len(byGang["x"]) != 4 || len(byGang["y"]) != 4 || len(used) != 8 {
		t.Fatalf("placements x=%v y=%v, want 4 distinct nodes each", byGang["x"], byGang["y"])
	}
}

// With both gangs' room reserved, a third gang waits with the reserved message, and its
// wait names the reserving gangs and their room.
func TestThirdGangWaitsForReservedRoom(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 8; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
	}
	x0, y0, z0 := gangMember("x-0", "x", 1), gangMember("y-0", "y", 1), gangMember("z-0", "z", 1)
	var pods []*v1.Pod
	for _, g := range []string{"x", "y", "z"} {
		for i := 0; i < 4; i++ {
			pods = append(pods, gangMember(fmt.Sprintf("%s-%d", g, i), g, 1))
		}
	}
	w := newWorld(t, nil, nodes, pods, podGroup("x", 4), podGroup("y", 4), podGroup("z", 4))
	w.mustPin(x0)
	w.mustPin(y0)
	c, st := w.preFilter(z0)
	if st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomReserved("ns/z") {
		t.Fatalf("PreFilter(z-0) = %v, want %q", st, msg.NoRoomReserved("ns/z"))
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(st)
	_, pst := w.pl.PostFilter(w.ctx, c.cs, z0, statuses)
	want := "Room is reserved for forming gangs: ns/x reserves 4 members on 4 nodes of a; ns/y reserves 4 members on 4 nodes of a."
	if pst.Message() != want {
		t.Fatalf("PostFilter(z-0) = %q, want %q", pst.Message(), want)
	}
}

// A standalone pod may use a node of a domain where a gang forms, outside the gang's
// reserved room; on the reserved node it is refused and told which gang reserves it.
func TestStandaloneUsesRoomOutsideReservations(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8)}
	x0, x1 := gangMember("x-0", "x", 4), gangMember("x-1", "x", 4)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, x1, solo}, podGroup("x", 2))
	w.mustPin(x0)
	if c, _ := w.pl.ledger.Commitment("ns/x"); c.Reserved["a0"].Count != 2 || len(c.Reserved) != 1 {
		t.Fatalf("x reserves %+v, want both members packed on a0", c.Reserved)
	}
	cs := framework.NewCycleState()
	if _, st := w.pl.PreFilter(w.ctx, cs, solo, w.nodeInfos()); !st.IsSuccess() {
		t.Fatalf("PreFilter(solo) = %v", st)
	}
	statuses := framework.NewDefaultNodeToStatus()
	for _, tc := range []struct {
		node string
		code fwk.Code
	}{{"a0", fwk.UnschedulableAndUnresolvable}, {"a1", fwk.Success}} {
		ni, _ := w.h.snapshot.NodeInfos().Get(tc.node)
		st := w.pl.Filter(w.ctx, cs, solo, ni)
		if st.Code() != tc.code || (tc.code != fwk.Success && st.Message() != msg.NodeReserved) {
			t.Fatalf("Filter(solo on %s) = %v, want %v", tc.node, st, tc.code)
		}
		if !st.IsSuccess() {
			statuses.Set(tc.node, st)
		}
	}
	_, pst := w.pl.PostFilter(w.ctx, cs, solo, statuses)
	if want := "Room is reserved for forming gangs: ns/x reserves 2 members on 1 node of a."; pst.Message() != want {
		t.Fatalf("PostFilter(solo) = %q, want %q", pst.Message(), want)
	}
}

// A gang whose reservation expired (a member never became ready) does not reserve the same
// domain again at once, even though no other domain fits: the domain rests for another
// timeout, the wait says so, and the gang is woken when the rest ends.
func TestExpiredDomainRests(t *testing.T) {
	w, m0, timers := timedGang(t)
	w.mustPin(m0)
	if len(*timers) != 1 {
		t.Fatalf("%d timers after the pin, want the hold's", len(*timers))
	}
	(*timers)[0]() // the gang's timeout passes: the reservation expires
	if w.pl.ledger.HeldDomains() != 0 {
		t.Fatal("the reservation outlived its timeout")
	}
	if _, st := w.preFilter(m0); st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
		t.Fatalf("PreFilter after expiry = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
	}
	if w.pl.ledger.HeldDomains() != 0 {
		t.Fatal("the gang reserved the resting domain again")
	}
	if len(*timers) != 2 {
		t.Fatalf("%d timers, want the rest's wake-up", len(*timers))
	}
	owner := placement.GangOwner{Gang: "ns/g", Owner: "uid-g"}
	w.pl.ledger.Rest(owner, placement.DomainRef{Key: testKey, Value: "a"}, time.Now()) // the rest ends
	(*timers)[1]()
	w.h.mu.Lock()
	got := slices.Clone(w.h.activated)
	w.h.mu.Unlock()
	if len(got) == 0 {
		t.Fatal("nothing activated when the rest ended")
	}
	w.mustPin(m0)
}

// A pinned member scores the nodes its gang reserved above the rest of the domain, so it
// takes its own slot instead of room other gangs count on.
func TestPinnedMemberPrefersReservedNodes(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8)}
	x0, x1 := gangMember("x-0", "x", 4), gangMember("x-1", "x", 4)
	w := newWorld(t, nil, nodes, []*v1.Pod{x0, x1}, podGroup("x", 2))
	c := w.mustPin(x0)
	infos := w.nodeInfos()
	if st := w.pl.PreScore(w.ctx, c.cs, x0, infos); !st.IsSuccess() {
		t.Fatalf("PreScore = %v", st)
	}
	score := func(node string) int64 {
		ni, _ := w.h.snapshot.NodeInfos().Get(node)
		s, st := w.pl.Score(w.ctx, c.cs, x0, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		return s
	}
	if a0, a1 := score("a0"), score("a1"); a0 <= a1 {
		t.Fatalf("scores a0=%d a1=%d, want the reserved node a0 first", a0, a1)
	}
}

// kube-scheduler's Permit timeout has the gang's timeout too and may fire before the
// reservation's expiry timer: an attempt its Unreserve unwinds at or past the deadline is an
// expiry (its domain rests); before the deadline it is an ordinary unwind and the gang may
// reserve the same room again at once.
func TestPermitTimeoutAtDeadlineRests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		rests   bool
	}{
		{"before the deadline", 500 * time.Millisecond, false},
		{"at the deadline", time.Second, true},
		{"past the deadline", 3 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, m0, timers := timedGang(t)
			start := time.Now()
			w.pl.ledger.SetNow(func() time.Time { return start })
			c := w.mustPin(m0)
			if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit = %v, want Wait", st)
			}
			w.pl.ledger.SetNow(func() time.Time { return start.Add(tc.elapsed) })
			w.pl.Unreserve(w.ctx, c.cs, m0, "a0") // the framework rejected the waiter
			if w.pl.ledger.HeldDomains() != 0 {
				t.Fatal("the reservation outlived the unwind")
			}
			_, st := w.preFilter(m0)
			if tc.rests {
				if st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomResting("ns/g", "a") {
					t.Fatalf("PreFilter after the unwind = %v, want %q", st, msg.NoRoomResting("ns/g", "a"))
				}
				if len(*timers) != 2 {
					t.Fatalf("%d timers, want the expiry's and the rest's wake-up", len(*timers))
				}
			} else if !st.IsSuccess() {
				t.Fatalf("PreFilter before the deadline = %v, want the gang to reserve again", st)
			}
			held := w.pl.ledger.HeldDomains()
			(*timers)[0]() // the expiry timer fires late: the attempt is gone, nothing more rests
			if w.pl.ledger.HeldDomains() != held {
				t.Fatalf("the late expiry timer changed the holds: %d → %d", held, w.pl.ledger.HeldDomains())
			}
		})
	}
}

// timedGang is a gang of two one-GPU members with a 1 s timeout over one domain of two nodes,
// whose timers the test fires by hand (returned in the order they were started).
func timedGang(t *testing.T) (*world, *v1.Pod, *[]func()) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	pg := podGroup("g", 2)
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, pg)
	timers := &[]func(){}
	w.pl.ledger.SetAfter(func(_ time.Duration, f func()) func() { *timers = append(*timers, f); return func() {} })
	return w, m0, timers
}
