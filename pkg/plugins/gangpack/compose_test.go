package gangpack

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// The composition test: random, reproducible sequences of cluster events drive the real
// plugin through PreFilter, Filter, PostFilter (preemption on), Reserve, Permit, Unreserve,
// PostBind, its queueing hints, timers and GC, in a simulated scheduler loop
// (compose_world_test.go, compose_queue_test.go, with kube-scheduler's nominations in
// compose_nominator_test.go), and the invariants of compose_check_test.go and
// compose_nomcheck_test.go are checked after every step. A failure prints the seed and a
// shrunk event list to paste into composeCases.

// composeEvent is one step: an operation and its arguments (taken modulo what exists, so a
// shrunk list stays meaningful).
type composeEvent struct {
	op      string
	a, b, c int
	d       int
}

func (e composeEvent) String() string { return fmt.Sprintf("%s %d %d %d %d", e.op, e.a, e.b, e.c, e.d) }

func parseEvent(t testing.TB, s string) composeEvent {
	var e composeEvent
	if _, err := fmt.Sscan(s, &e.op, &e.a, &e.b, &e.c, &e.d); err != nil {
		t.Fatalf("bad event %q: %v", s, err)
	}
	return e
}

// composeWeights are the relative frequencies of the random operations.
var composeWeights = []struct {
	op string
	w  int
}{
	{"sched", 34}, {"bind", 12}, {"advance", 7}, {"gang", 6}, {"delete", 5}, {"pod", 3}, {"ungate", 2},
	{"relabel", 1}, {"nodedel", 1}, {"notready", 1}, {"minmember", 1}, {"pgdel", 1}, {"restart", 1}, {"nodefail", 2},
}

// generate derives a sequence from the seed: a few cliques of 2-4 nodes, then steps.
func generate(seed int64, steps int) []composeEvent {
	r := rand.New(rand.NewSource(seed))
	var out []composeEvent
	cliques := 2 + r.Intn(3)
	for c := 0; c < cliques; c++ {
		for n := 2 + r.Intn(3); n > 0 && len(out) < 12; n-- {
			out = append(out, composeEvent{op: "node", a: c, b: r.Intn(2)})
		}
	}
	total := 0
	for _, w := range composeWeights {
		total += w.w
	}
	for i := 0; i < steps; i++ {
		x := r.Intn(total)
		for _, w := range composeWeights {
			if x -= w.w; x < 0 {
				out = append(out, composeEvent{op: w.op, a: r.Intn(1000), b: r.Intn(1000), c: r.Intn(4), d: r.Intn(16)})
				break
			}
		}
	}
	return out
}

// run plays the events, then the liveness check; it returns the first violation (nil: none).
func runCompose(t testing.TB, events []composeEvent) *violation {
	return runComposeWith(t, events, false)
}

// runComposeWith is runCompose in a cluster with DRA channel devices when dra is set
// (compose_dra_test.go).
func runComposeWith(t testing.TB, events []composeEvent, dra bool) *violation {
	s := newSimWith(t, 0, dra)
	defer s.cancel()
	if os.Getenv("OME_COMPOSE_TRACE") != "" { // what happened, printed when an invariant fails
		s.trace = []string{}
		defer func() {
			if len(s.chk.found) > 0 {
				t.Logf("trace:\n%s", strings.Join(s.trace, "\n"))
			}
		}()
	}
	for _, e := range events {
		s.tracef("event %v", e)
		s.apply(e)
		s.settle()
		s.chk.step(e.op)
		if len(s.chk.found) > 0 {
			return &s.chk.found[0]
		}
	}
	s.liveness()
	if len(s.chk.found) > 0 {
		return &s.chk.found[0]
	}
	return nil
}

// quiesce runs the scheduler until nothing is left to do: active pods are scheduled,
// admitted ones bound, and the clock moves to the next timer, deadline, deletion or end of
// a backoff. It reports false when the scheduler was still busy after rounds steps or two
// simulated hours (pods retrying without end).
func (s *sim) quiesce(rounds int) bool {
	end := s.now.Add(2 * time.Hour)
	for i := 0; i < rounds && s.now.Before(end); i++ {
		if sp := s.nextActive(i); sp != nil {
			s.schedOne(sp, i)
		} else if l := s.inState(stAllowed); len(l) > 0 {
			s.bind(l[0], false)
		} else if d, ok := s.nextDue(); ok {
			s.advance(d)
		} else {
			return true
		}
		s.settle()
		s.chk.step("quiesce")
	}
	return false
}

// liveness: once the scheduler is idle, every parked pod must be one that no retry would
// place; a parked pod that binds when the unschedulable pool is flushed had no requeue path.
func (s *sim) liveness() {
	const rounds = 300
	if !s.quiesce(rounds) || len(s.chk.found) > 0 {
		return // still retrying: liveness cannot be judged
	}
	parked := s.inState(stParked)
	s.tracef("liveness: flush %d parked", len(parked))
	for _, sp := range parked {
		sp.state = stActive
	}
	// A flushed preemptor that kube-scheduler would retry only at its own flush of the
	// unschedulable pool (a pod whose preemption found no victim is not requeued when
	// lower-priority pods arrive later, as for DefaultPreemption) may now evict: a pod
	// placed on the room it frees was waiting for that preemption, not lacking a requeue
	// path of its own.
	s.flushFreed = map[string]bool{}
	s.quiesce(rounds)
	var stuck []string
	for _, sp := range parked {
		if s.flushFreed[sp.node] {
			continue
		}
		if sp.state == stBound || sp.state == stTerminating {
			stuck = append(stuck, sp.pod.Name)
		}
	}
	if len(stuck) > 0 {
		sort.Strings(stuck)
		s.chk.fail(invLiveness, "pods %v were parked with no requeue path, and bound once retried", stuck)
	}
}

// shrink drops events while the same invariant still fails.
func shrink(t testing.TB, events []composeEvent, inv string) []composeEvent {
	return shrinkWith(t, events, inv, false)
}

// shrinkWith is shrink for runComposeWith.
func shrinkWith(t testing.TB, events []composeEvent, inv string, dra bool) []composeEvent {
	for changed := true; changed; {
		changed = false
		for i := len(events) - 1; i >= 0; i-- {
			cand := append(append([]composeEvent{}, events[:i]...), events[i+1:]...)
			if v := runComposeWith(t, cand, dra); v != nil && v.inv == inv {
				events, changed = cand, true
			}
		}
	}
	return events
}

func formatCase(seed int64, v *violation, events []composeEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{name: %q, seed: %d, inv: %q, events: []string{", v.inv, seed, v.inv)
	for i, e := range events {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", e.String())
	}
	b.WriteString("}},")
	return b.String()
}

// composeCase is a recorded sequence. knownBug, when set, says the violation is an open bug:
// the case logs instead of failing until the fix lands and the field is cleared.
type composeCase struct {
	name, inv, knownBug string
	seed                int64
	events              []string
}

// composeTolerated are the invariants with open bugs: a random sequence violating one of them
// is logged, not failed. Remove an entry when its fix lands.
var composeTolerated = map[string]string{}

// composeCases are sequences the random search found, shrunk.
var composeCases = []composeCase{
	{name: "partners-leave-group-domain-after-relabel", seed: 1, inv: invPartners,
		events: []string{"node 0 1 0 0", "node 0 1 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 2 0 0 0", "node 2 0 0 0", "node 3 1 0 0", "gang 737 631 1 2", "gang 721 189 3 8", "relabel 577 463 0 4"}},
	{name: "hold-outlives-15-minutes", seed: 54, inv: invHoldEnds,
		events: []string{"node 0 1 0 0", "node 0 0 0 0", "node 1 1 0 0", "node 1 1 0 0", "node 2 1 0 0", "node 2 1 0 0", "gang 23 1 1 7", "sched 539 763 2 2", "sched 487 297 2 5", "delete 411 728 0 6", "gang 140 478 2 4", "gang 101 508 2 2", "delete 752 782 3 14", "gang 434 476 1 3"}},
	{name: "partner-admitted-after-min-member-raised", seed: 224, inv: invMinMember,
		events: []string{"node 0 0 0 0", "node 0 0 0 0", "gang 223 905 1 15", "delete 40 983 3 10", "gang 141 646 1 9", "sched 12 418 3 13", "minmember 650 829 2 4"}},
	{name: "partner-gang-split-after-relabel", seed: 308, inv: invNoSplit,
		events: []string{"node 0 0 0 0", "node 0 0 0 0", "node 0 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 1 1 0 0", "gang 971 824 2 11", "sched 842 514 0 6", "nodedel 290 653 2 1", "sched 334 458 1 5", "nodedel 798 947 1 4", "relabel 966 63 1 0", "ungate 358 15 2 2"}},
	{name: "partner-replanned-alone-after-its-pin-went-stale", seed: 471, inv: invPartners,
		events: []string{"node 0 1 0 0", "node 0 0 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 2 0 0 0", "node 2 1 0 0", "node 2 1 0 0", "gang 92 375 1 9", "gang 147 906 3 10", "sched 100 306 2 10", "sched 728 695 1 4", "sched 888 852 3 7", "gang 209 830 1 11", "nodedel 775 307 3 2"}},
	{name: "preempts-again-while-victims-terminate", seed: 409, inv: invPreemption,
		events: []string{"node 0 1 0 0", "node 0 0 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 1 0 0", "pod 557 835 0 14", "gang 249 914 0 11", "notready 144 761 1 1", "sched 857 787 0 13", "sched 262 72 1 15", "gang 2 605 2 5", "notready 646 777 2 6"}},
	{name: "partner-evicted-apart-after-its-podgroup-deleted", seed: 1111, inv: invPreemption,
		events: []string{"node 0 1 0 0", "node 0 1 0 0", "node 0 0 0 0", "gang 401 23 1 2", "gang 929 534 3 15", "sched 170 215 3 10", "sched 652 116 3 13", "sched 996 492 0 11", "pgdel 100 482 1 2", "gang 215 478 2 3"}},
	{name: "partner-parked-after-pending-pod-deleted", seed: 695, inv: invLiveness,
		events: []string{"node 0 0 0 0", "node 0 0 0 0", "node 0 0 0 0", "node 2 1 0 0", "node 2 1 0 0", "gang 649 334 2 15", "sched 13 336 0 15", "sched 111 202 0 3", "pod 601 306 1 9", "sched 184 577 2 8", "gang 190 15 3 9", "sched 495 954 1 4", "sched 644 869 1 12", "sched 678 41 3 8", "delete 773 79 0 4"}},
	{name: "preemptor-parked-after-victims-deleted-in-its-cycle", seed: 1852, inv: invLiveness,
		events: []string{"node 0 0 0 0", "node 0 1 0 0", "node 0 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 1 1 0 0", "gang 182 393 2 14", "notready 794 902 0 2", "gang 786 409 2 7", "pod 499 550 3 14", "sched 208 403 2 6", "sched 734 422 1 9", "gang 21 38 3 11", "sched 94 864 2 10", "sched 332 369 2 11", "sched 365 351 2 1", "nodedel 883 611 3 6", "pod 191 407 3 3"}},
	{name: "repair-evicts-part-of-a-unit", seed: 886, inv: invPreemption,
		events: []string{"node 0 1 0 0", "node 0 0 0 0", "node 0 0 0 0", "node 0 1 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "gang 891 251 2 0", "delete 372 542 2 7", "gang 654 269 2 4", "sched 268 53 0 11", "sched 397 930 1 4", "gang 33 108 0 0", "sched 653 331 3 14", "sched 308 157 2 12", "sched 66 683 3 0", "sched 267 246 1 1", "sched 145 32 3 6", "nodedel 702 9 2 5"}},
	{name: "partner-repairs-while-its-group-waits", seed: 163, inv: invLiveness,
		events: []string{"node 1 1 0 0", "gang 794 636 1 9", "delete 576 134 0 14", "sched 922 729 2 13", "sched 784 299 0 4", "delete 996 33 3 6", "bind 990 288 2 7", "restart 538 355 2 8", "gang 758 978 3 4"}},
	{name: "repair-evicts-a-placement-group-whole", seed: 1544, inv: invPreemption,
		events: []string{"node 0 0 0 0", "node 0 1 0 0", "node 0 1 0 0", "node 0 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 2 1 0 0", "node 2 1 0 0", "node 2 0 0 0", "nodedel 511 305 2 8", "gang 10 621 0 15", "gang 338 133 1 3", "notready 659 889 3 12", "sched 925 278 2 14", "sched 230 181 1 4", "nodefail 337 274 1 5"}},
	{name: "spread-gang-parked-after-preempting-beside-a-pod-preemptor", seed: 5014, inv: invLiveness,
		events: []string{"node 0 0 0 0", "node 0 0 0 0", "node 0 0 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "notready 539 892 1 15", "gang 66 684 3 2", "pod 469 584 2 13", "sched 413 858 0 9", "sched 55 168 1 4", "nodefail 75 788 3 5", "nodedel 243 670 2 9", "bind 836 86 0 7", "sched 600 79 2 11", "sched 786 886 1 9", "bind 564 729 0 6", "pod 384 580 1 1", "bind 386 388 0 12", "sched 722 616 0 11", "bind 458 58 0 14", "pod 165 736 1 5", "sched 821 849 1 13", "sched 731 987 1 12", "gang 23 660 1 7", "advance 216 876 3 13"}},
	{name: "pinned-member-short-behind-a-resumed-hold", seed: 5169, inv: invLiveness,
		events: []string{"node 0 0 0 0", "node 0 1 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 1 0 0", "node 2 1 0 0", "node 2 1 0 0", "node 2 0 0 0", "node 2 0 0 0", "node 3 0 0 0", "node 3 0 0 0", "pod 620 826 2 9", "sched 625 998 2 14", "nodefail 728 120 0 9", "nodefail 188 514 2 4", "nodedel 950 742 0 2", "gang 187 502 1 5", "sched 102 973 2 2", "sched 899 523 1 3", "restart 903 25 1 9", "delete 417 453 2 5", "gang 325 996 2 3", "sched 261 165 2 2", "gang 935 453 0 4", "delete 311 12 1 6"}},
	{name: "victim-gang-member-parked-after-its-placed-member-was-evicted", seed: 6889, inv: invLiveness,
		knownBug: "a victim gang's unbound member, parked short of room in its pinned domain, is not woken when preemption evicts the gang's only placed member (found with 8000 sequences; present before this round's changes)",
		events:   []string{"node 0 0 0 0", "node 0 0 0 0", "node 0 1 0 0", "node 0 1 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 1 0 0 0", "node 1 1 0 0", "nodefail 800 11 1 13", "gang 51 179 0 2", "gang 878 206 1 1", "nodefail 680 117 0 6", "nodefail 457 732 2 4", "gang 378 939 3 5", "sched 627 516 0 11", "delete 352 208 0 4", "nodefail 283 113 3 6", "notready 761 905 3 0", "sched 170 563 1 14", "sched 938 405 2 7", "nodefail 394 886 1 2"}},
	{name: "gang-reserves-room-an-equal-priority-gang-preempted-for", seed: 2320, inv: invDoubleCount,
		events: []string{"node 0 0 0 0", "node 0 1 0 0", "node 1 1 0 0", "node 1 0 0 0", "node 1 1 0 0", "node 1 1 0 0", "gang 384 481 0 9", "sched 682 101 1 13", "sched 549 146 1 15", "bind 701 920 1 13", "delete 203 895 3 15", "pod 143 568 1 5", "sched 304 710 2 10", "gang 216 183 2 8", "bind 965 183 2 10", "bind 336 375 3 5", "pod 658 892 1 6", "sched 298 254 2 8", "sched 590 831 0 3", "bind 209 852 2 14", "sched 362 70 1 4", "gang 727 12 3 3", "sched 300 887 2 6", "sched 717 154 3 5", "sched 278 961 0 12", "bind 325 75 3 11", "gang 614 769 1 3", "bind 289 116 0 11", "gang 358 631 1 0"}},
	// The next two fail with the nomination fix of nominate.go undone: Unreserve not handing
	// the published node back to the assumed copy (a Permit timeout leaves it in the API),
	// and PostFilter keeping a nomination it does not own (after a restart).
	{name: "permit-timeout-leaves-no-nomination", seed: 1, inv: invNoPhantom,
		events: []string{"node 0 1 0 0", "gang 737 631 1 2"}},
	{name: "postfilter-clears-an-inherited-nomination", seed: 3, inv: invNoPhantom,
		events: []string{"node 0 0 0 0", "node 0 0 0 0", "node 0 1 0 0", "gang 842 241 1 15", "sched 112 760 2 15", "sched 652 852 0 1", "restart 709 451 3 13", "delete 200 862 2 15"}},
	{name: "repair-parks-without-requeue", seed: 710, inv: invLiveness,
		events: []string{"node 0 1 0 0", "node 0 0 0 0", "node 1 0 0 0", "node 1 0 0 0", "gang 8 83 2 13", "gang 22 471 2 9", "relabel 56 21 2 13", "gang 219 36 1 3"}},
}

// composeSequences is how many random sequences TestCompose plays: OME_COMPOSE_SEQUENCES, else
// 2000 (make unit runs them without the race detector, about 40 s on 2 shared cores), 200
// with -short, and 50 under the race detector, which slows the simulator over tenfold. The
// count never depends on the machine's speed: every run plays the same seeds.
func composeSequences(t *testing.T) int {
	if v := os.Getenv("OME_COMPOSE_SEQUENCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("OME_COMPOSE_SEQUENCES=%q: %v", v, err)
		}
		return n
	}
	switch {
	case raceEnabled:
		return 50
	case testing.Short():
		return 200
	}
	return 2000
}

func TestCompose(t *testing.T) {
	metrics.Register()
	for _, c := range composeCases {
		t.Run("case/"+c.name, func(t *testing.T) {
			var events []composeEvent
			for _, e := range c.events {
				events = append(events, parseEvent(t, e))
			}
			v := runCompose(t, events)
			if v != nil && v.inv != c.inv {
				t.Errorf("%s: %s (the case expects %s)", v.inv, v.msg, c.inv)
				return
			}
			switch {
			case c.knownBug != "" && v != nil:
				t.Logf("known bug (%s) still present: %s: %s", c.knownBug, v.inv, v.msg)
			case c.knownBug != "":
				t.Logf("known bug (%s) no longer reproduces: clear knownBug to enforce this case", c.knownBug)
			case v != nil:
				t.Errorf("%s: %s", v.inv, v.msg)
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		n, start := composeSequences(t), time.Now()
		resumed := pinCounter(t, metrics.PinNominated)
		fired := map[string]int64{}
		for seed := int64(1); seed <= int64(n); seed++ {
			events := generate(seed, 40)
			v := runCompose(t, events)
			if v == nil {
				continue
			}
			if _, seen := fired[v.inv]; !seen {
				fired[v.inv] = seed
				report(t, seed, v, events)
			}
		}
		el := time.Since(start)
		resumed = pinCounter(t, metrics.PinNominated) - resumed
		t.Logf("%d sequences in %s (%.0f/s); first seed per invariant fired: %v; gangs resumed from nominations after a restart: %v",
			n, el.Round(time.Millisecond), float64(n)/el.Seconds(), fired, resumed)
		if n >= 1000 && resumed == 0 {
			t.Error("no restart resumed a gang from its nominations: the failover path went untested")
		}
	})
}

// report logs a violation of an invariant with an open bug (its cases are in composeCases),
// or shrinks the sequence and fails the test.
func report(t testing.TB, seed int64, v *violation, events []composeEvent) {
	if bug, ok := composeTolerated[v.inv]; ok {
		t.Logf("known bug (%s): seed %d: %s: %s", bug, seed, v.inv, v.msg)
		return
	}
	small := shrink(t, events, v.inv)
	t.Errorf("seed %d: %s: %s\n\t%s", seed, v.inv, v.msg, formatCase(seed, v, small))
}

func FuzzCompose(f *testing.F) {
	metrics.Register()
	for _, seed := range []int64{1, 2, 3, 42} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		events := generate(seed, 40)
		if v := runCompose(t, events); v != nil {
			report(t, seed, v, events)
		}
	})
}
