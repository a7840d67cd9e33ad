package gangpack

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Repair in place (docs/operations.md, "An instance lost a node"): a degraded gang, bound in
// a domain with fewer than minMember members, may evict strictly lower-priority units inside
// that domain only, for all its missing members at once; survivors are never victims and room
// elsewhere is never bought. When nothing can be evicted it waits, and its PodGroup says so.

// repairWorld is domain a (a1..a4) with the survivors of the gang hi (priority 10, minMember
// 4) on a1 and a2 and the given pods; domain b (b1..b4) is empty. The replacements hi-2 and
// hi-3 are pending.
func repairWorld(t *testing.T, preemption bool, extra ...*v1.Pod) (w *preemptWorld, repl []*v1.Pod) {
	t.Helper()
	var nodes []*v1.Node
	for _, d := range []string{"a", "b"} {
		for i := 1; i <= 4; i++ {
			nodes = append(nodes, testNode(d+string(rune('0'+i)), d, 1))
		}
	}
	pods := gangOn("hi", 10, "a1", "a2")
	repl = []*v1.Pod{prio(gangMember("hi-2", "hi", 1), 10), prio(gangMember("hi-3", "hi", 1), 10)}
	pods = append(append(pods, repl...), extra...)
	args := testArgs()
	w = newPreemptWorldArgs(t, args, nodes, pods, podGroup("hi", 4), podGroup("lo", 2))
	w.pl.args.Preemption = preemption
	return w, repl
}

// degradedEvents returns the GangDegraded events' notes, by regarding object.
func (w *preemptWorld) degradedEvents() map[string][]string {
	w.t.Helper()
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	out := map[string][]string{}
	for _, e := range w.h.events {
		if e.reason == msg.ReasonGangDegraded {
			out[e.regarding] = append(out[e.regarding], e.note)
		}
	}
	return out
}

// refreshDegraded runs GC's count of degraded gangs.
func (w *preemptWorld) refreshDegraded() {
	w.t.Helper()
	live, err := w.pl.members.LiveGangs()
	if err != nil {
		w.t.Fatal(err)
	}
	w.pl.refreshDegraded(live)
}

func degradedGauge(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(metrics.DegradedGangs.WithLabelValues(testKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Lower-priority standalone pods inside the domain are evicted, enough for both missing
// members in one decision; the empty domain b is never used and no survivor is touched.
func TestRepairEvictsStandalonePodsInsideDomain(t *testing.T) {
	w, repl := repairWorld(t, true, placedOn(prio(standalone("batch-3"), 1), "a3"), placedOn(prio(standalone("batch-4"), 1), "a4"))
	res, st := w.postFilter(repl[0])
	assertNominated(t, res, st, "a3", "a4")
	w.awaitRemaining("hi-0", "hi-1", "hi-2", "hi-3")
	notes := w.eventNotes()
	for _, v := range []string{testNS + "/batch-3", testNS + "/batch-4"} {
		if notes[v] != "Preempted by gang ns/hi to place it in domain a" {
			t.Fatalf("Preempted event on %s = %q", v, notes[v])
		}
	}
	c, ok := w.pl.ledger.Commitment(testNS + "/hi")
	if !ok || c.Domain != "a" || c.Reserved.Members() != 2 {
		t.Fatalf("pin after repair = %+v %v, want domain a reserving the 2 freed members", c, ok)
	}
	// The second replacement waits on the same preemption instead of evicting again.
	_, st = w.postFilter(repl[1])
	wantWait(t, st, msg.PreemptWaiting(2, "a"))
	if len(w.degradedEvents()) != 0 {
		t.Fatalf("GangDegraded events for a gang being repaired: %v", w.degradedEvents())
	}
}

// A lower-priority gang inside the domain is evicted whole, also its member outside it; the
// lower-priority standalone pod in domain b stays.
func TestRepairEvictsLowerGangWhole(t *testing.T) {
	lo := gangOn("lo", 1, "a3", "b1")
	lo = append(lo, placedOn(prio(standalone("batch-a4"), 20), "a4"), placedOn(prio(standalone("batch-b2"), 1), "b2"))
	w, repl := repairWorld(t, true, lo...)
	// a4 holds a higher-priority pod: one member of room at most, so the gang waits (a gang
	// of 2 missing members needs a3 and a4).
	_, st := w.postFilter(repl[0])
	wantWait(t, st, msg.PreemptPrefix+msg.ReasonNoDomain(2))
	if got := w.remaining(); len(got) != 8 {
		t.Fatalf("evicted %v with no domain to free", got)
	}
	// The higher-priority pod goes: now lo (a3 and b1) is evicted whole.
	w.pods = slices.DeleteFunc(w.pods, func(p *v1.Pod) bool { return p.Name == "batch-a4" })
	_ = w.podInf.GetIndexer().Delete(lo[2])
	w.resnap()
	res, st := w.postFilter(repl[1])
	assertNominated(t, res, st, "a3", "a4")
	w.awaitRemaining("batch-a4", "batch-b2", "hi-0", "hi-1", "hi-2", "hi-3")
}

// Without lower-priority pods in the domain the gang waits: the replacement's message names
// the degraded gang, its PodGroup gets one GangDegraded warning, and GC counts it.
func TestRepairNothingToEvict(t *testing.T) {
	for _, preemption := range []bool{true, false} {
		t.Run(map[bool]string{true: "preemption", false: "no-preemption"}[preemption], func(t *testing.T) {
			w, repl := repairWorld(t, preemption, placedOn(prio(standalone("web-3"), 10), "a3"), placedOn(prio(standalone("web-4"), 20), "a4"),
				placedOn(prio(standalone("batch-b"), 1), "b1"))
			c, st := w.preFilter(repl[0])
			want := "adopted domain a cannot fit remaining gang members ns/hi: " + msg.Degraded("ns/hi", "a", 0, 2)
			if st.Code() != fwk.Unschedulable || st.Message() != want {
				t.Fatalf("PreFilter = %v, want %q", st, want)
			}
			_, pst := w.pl.PostFilter(w.ctx, c.cs, repl[0], framework.NewDefaultNodeToStatus())
			if preemption {
				// batch-b is of lower priority but outside the domain: it is no candidate.
				wantWait(t, pst, msg.PreemptPrefix+msg.ReasonNoDomain(2))
			}
			if got := w.remaining(); len(got) != 7 {
				t.Fatalf("pods left %v: nothing may be evicted", got)
			}
			// A second replacement's failure tells the PodGroup nothing new.
			c, _ = w.preFilter(repl[1])
			_, _ = w.pl.PostFilter(w.ctx, c.cs, repl[1], framework.NewDefaultNodeToStatus())
			ev := w.degradedEvents()[testNS+"/hi"]
			wantNote := msg.Degraded("ns/hi", "a", 0, 2)
			if preemption {
				wantNote += msg.PreemptPrefix + msg.ReasonNoDomain(2)
			}
			if len(ev) != 1 || ev[0] != wantNote {
				t.Fatalf("GangDegraded events = %q, want one %q", ev, wantNote)
			}
			w.refreshDegraded()
			if g := degradedGauge(t); g != 1 {
				t.Fatalf("ome_scheduler_degraded_gangs = %v, want 1", g)
			}
			// The survivors are gone too (the instance was deleted): nothing is degraded.
			for _, p := range w.pods {
				if strings.HasPrefix(p.Name, "hi-") {
					_ = w.podInf.GetIndexer().Delete(p)
				}
			}
			w.refreshDegraded()
			if g := degradedGauge(t); g != 0 {
				t.Fatalf("ome_scheduler_degraded_gangs = %v after the gang went, want 0", g)
			}
		})
	}
}

// A survivor's Terminating sibling gives its room back: the gang waits for it, evicts
// nobody and is not reported as degraded.
func TestRepairWaitsForRoomComing(t *testing.T) {
	old := deletingUntil(placedOn(prio(gangMember("hi-old", "hi", 1), 10), "a3"), time.Now().Add(30*time.Second))
	w, repl := repairWorld(t, true, old, placedOn(prio(standalone("batch-b"), 1), "b1"))
	_, st := w.postFilter(repl[0])
	wantWait(t, st, msg.PreemptRoomComing(1, "a"))
	if got := w.remaining(); len(got) != 6 || len(w.degradedEvents()) != 0 {
		t.Fatalf("pods left %v, events %v: a gang with room coming evicts nobody and is not reported", got, w.degradedEvents())
	}
}

// A surplus member of a whole gang (minMember bound) never repairs: the gang is not degraded.
func TestSurplusMemberDoesNotRepair(t *testing.T) {
	w, repl := repairWorld(t, true, placedOn(prio(standalone("batch-3"), 1), "a3"), placedOn(prio(standalone("batch-4"), 1), "a4"))
	pg := podGroup("hi", 2)
	if err := w.pgs.Update(pg); err != nil {
		t.Fatal(err)
	}
	c, st := w.preFilter(repl[0])
	if st.IsSuccess() {
		t.Fatalf("PreFilter(%s) = success; the domain has no room", repl[0].Name)
	}
	if _, st = w.pl.PostFilter(w.ctx, c.cs, repl[0], framework.NewDefaultNodeToStatus()); st.IsSuccess() || len(w.remaining()) != 6 {
		t.Fatalf("surplus member's PostFilter = %v, pods %v: nothing may be evicted", st, w.remaining())
	}
}

// A partner of a placement group that lost a member repairs alone, in its own domain: its
// group's partner, of lower priority and in the same clique, is never its victim; a
// lower-priority standalone pod there is.
func TestPartnerRepairsAloneSparingItsGroup(t *testing.T) {
	nodes := cliqueNodes("c2", "z1", 5)
	nodes = slices.DeleteFunc(nodes, func(n *v1.Node) bool { return n.Name == "c2-1" }) // decode-1's node failed
	partner := func(p *v1.Pod, node string, pr int32) *v1.Pod {
		p = placedOn(prio(p, pr), node)
		p.Labels[testGroupLabel] = "svc"
		return p
	}
	pods := []*v1.Pod{
		partner(gangMember("decode-0", "decode", 1), "c2-0", 10),
		partner(gangMember("prefill-0", "prefill", 1), "c2-2", 1),
		partner(gangMember("prefill-1", "prefill", 1), "c2-3", 1),
		placedOn(prio(standalone("batch"), 5), "c2-4"),
	}
	repl := prio(gangMember("decode-r", "decode", 1), 10)
	repl.Labels[testGroupLabel] = "svc"
	w := newPreemptWorldArgs(t, groupArgs(), nodes, append(pods, repl),
		partnerPG("decode", 2, "svc", "2", testZoneKey), partnerPG("prefill", 2, "svc", "2", testZoneKey))
	res, st := w.postFilter(repl)
	assertNominated(t, res, st, "c2-4")
	w.awaitRemaining("decode-0", "decode-r", "prefill-0", "prefill-1")
	if n := w.eventNotes()[testNS+"/batch"]; n != "Preempted by gang ns/decode to place it in domain c2" {
		t.Fatalf("Preempted event on batch = %q", n)
	}
}
