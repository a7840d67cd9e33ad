package gangpack

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// More partner placement group cases: expiry, where the label sits, the feature off, bounds,
// preemption.

// Rule 4: a partner's hold reaching its timeout unwinds the whole group, the committed
// partner included (its waiters are rejected).
func TestPartnerGroupExpiryCascades(t *testing.T) {
	nodes := cliqueNodes("c4", "", 4)
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	var timers []func()
	w.pl.ledger.SetAfter(func(_ time.Duration, f func()) func() { timers = append(timers, f); return func() {} })
	waiters, st, _ := w.formGroup(a)
	if st.Code() != fwk.Wait || len(waiters) != 2 {
		t.Fatalf("a-1 Permit %v with %d waiters; want Wait (b forming) and 2", st, len(waiters))
	}
	if len(timers) != 2 {
		t.Fatalf("%d hold timers, want one per partner", len(timers))
	}
	for _, f := range timers { // a is committed (left alone), b expires and takes a with it
		f()
	}
	for _, name := range []string{"a-0", "a-1"} {
		if v := waiters[name].await(testWait); v != msg.Unwound("ns/a") {
			t.Errorf("%s: %q, want %q", name, v, msg.Unwound("ns/a"))
		}
	}
	if w.pl.ledger.Len() != 0 {
		t.Errorf("%d pins left, want 0", w.pl.ledger.Len())
	}
}

// Rule 4 with a minMember change: a committed partner whose member waits at Permit for the
// rest of its group is unwound when its minMember grows, so the group's completion cannot
// admit it with fewer members than the new size; the partner forming with it goes too.
func TestPartnerGroupMinMemberRaisedUnwindsCommittedPartner(t *testing.T) {
	nodes := cliqueNodes("c3", "", 3)
	a, b := members("a", 2), members("b", 1)
	old := partnerPG("a", 1, "grp", "2", "")
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b), old, partnerPG("b", 1, "grp", "2", ""))
	waiters, st, _ := w.formGroup(a[:1])
	if st.Code() != fwk.Wait || len(waiters) != 1 {
		t.Fatalf("a-0 Permit %v with %d waiters; want Wait (b not placed) and 1", st, len(waiters))
	}
	grown := old.DeepCopy()
	grown.Spec.MinMember = 2
	if err := w.pgs.Update(grown); err != nil {
		t.Fatal(err)
	}
	w.pl.ledger.OnPodGroupChange(old, grown)
	if v := waiters["a-0"].await(testWait); v != msg.Unwound("ns/a") {
		t.Fatalf("a-0: %q, want %q", v, msg.Unwound("ns/a"))
	}
	if w.pl.ledger.Len() != 0 {
		t.Errorf("%d pins left, want 0", w.pl.ledger.Len())
	}
}

// The group label may sit on every member pod instead of the PodGroup.
func TestPartnerGroupLabelOnPods(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2))
	a, b := members("a", 2), members("b", 2)
	for _, p := range slices.Concat(a, b) {
		p.Labels[testGroupLabel] = "grp"
	}
	pa, pb := partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", "")
	pa.Labels, pb.Labels = nil, nil
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b), pa, pb)
	c := w.mustPin(b[0])
	if got := domainOf(t, c.res.NodeNames.UnsortedList()); got != "c4" {
		t.Fatalf("b-0 candidates in %s, want c4", got)
	}
	if p, ok := w.pl.ledger.Commitment("ns/a"); !ok || p.Domain != "c4" {
		t.Errorf("a pinned %v in %q, want c4 with b", ok, p.Domain)
	}
}

// Partner groups off (placementGroupLabel ""): the label means nothing and each gang is
// placed alone by best fit.
func TestPartnerGroupOff(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2))
	a := members("a", 2)
	w := newWorld(t, nil, nodes, a, partnerPG("a", 2, "grp", "2", ""))
	c := w.mustPin(a[0])
	if got := domainOf(t, c.res.NodeNames.UnsortedList()); got != "c2" {
		t.Fatalf("a-0 candidates in %s, want c2 (best fit alone)", got)
	}
}

// A size above the supported bound is refused with the size message and its detail.
func TestPartnerGroupTooLarge(t *testing.T) {
	a := members("a", 1)
	w := newWorld(t, groupArgs(), cliqueNodes("c4", "", 4), a, partnerPG("a", 1, "grp", "5", ""))
	_, st := w.preFilter(a[0])
	want := "placement group ns/grp: ome.io/placement-group-size must be an integer of at least 2: at most 4 partners are supported"
	if st.Message() != want {
		t.Errorf("PreFilter = %q, want %q", st.Message(), want)
	}
}

// A placement group that fits nowhere preempts as one unit (docs/design.md §19, item 7): one group domain is
// freed for every partner, the victims are evicted whole, and the other partner waits on the
// same victims instead of preempting again.
func TestPartnerGroupPreemptsAsOneUnit(t *testing.T) {
	nodes := append(cliqueNodes("c1", "", 4), cliqueNodes("c2", "", 2)...)
	var pods []*v1.Pod
	for i, n := range []string{"c1-0", "c1-1", "c1-2", "c1-3"} {
		pods = append(pods, placedOn(prio(gangMember(fmt.Sprintf("low-%d", i), "low", 1), 1), n))
	}
	pods = append(pods, placedOn(prio(gangMember("small-0", "small", 1), 1), "c2-0"))
	a, b := members("a", 2), members("b", 2)
	for _, p := range append(slices.Clone(a), b...) {
		pods = append(pods, prio(p, 10))
	}
	w := newPreemptWorldArgs(t, groupArgs(), nodes, pods, podGroup("low", 4), podGroup("small", 1),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	res, st := w.postFilter(a[0])
	if !st.IsSuccess() || res == nil {
		t.Fatalf("PostFilter(a-0) = %v, %v; want a preemption", res, st)
	}
	want := []string{"a-0", "a-1", "b-0", "b-1", "small-0"}
	if got := w.remaining(); !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v (the low gang evicted whole, c2 untouched)", got, want)
	}
	if n := w.eventNotes()[testNS+"/low-0"]; n != "Preempted by gang "+testNS+"/a to place it in domain c1" {
		t.Fatalf("Preempted event on low-0 = %q", n)
	}
	_, st = w.postFilter(b[0])
	if !strings.Contains(st.Message(), "; preemption: waiting for 4 preempted pods to terminate in domain c1") {
		t.Fatalf("PostFilter(b-0) = %q, want it to wait on the group's victims", st.Message())
	}
	if got := w.remaining(); !slices.Equal(got, want) {
		t.Fatalf("pods left after the partner's cycle %v, want %v", got, want)
	}
}

// Any group label and annotation values give either no group, a valid group (size 2 to 4, a
// label key), or one of the documented reasons; never a panic.
func FuzzPlacementGroupInterpretation(f *testing.F) {
	f.Add("grp", "2", "", true)
	f.Add("grp", "-1", "not a key/", false)
	f.Add("", "3", "topology.kubernetes.io/zone", true)
	f.Add("g", "99999999999999999999", "x", true)
	f.Fuzz(func(t *testing.T, name, size, key string, onGroup bool) {
		pg := partnerPG("a", 2, name, size, key)
		pod := gangMember("a-0", "a", 1)
		if !onGroup {
			pg.Labels = nil
			pod.Labels[testGroupLabel] = name
		}
		g, st := gang.InterpretGroup(groupArgs(), pod, pg, testKey)
		switch {
		case st == nil && g == nil:
			if name != "" {
				t.Fatalf("group %q ignored", name)
			}
		case st == nil:
			if g.Size < 2 || g.Size > gang.MaxGroupSize || g.TopologyKey == "" || g.Key != "ns/"+name {
				t.Fatalf("accepted an invalid group: %+v", g)
			}
		case !strings.HasPrefix(st.Message(), "placement group ns/"+name+": "):
			t.Fatalf("unknown reason %q", st.Message())
		}
	})
}

// GC forgets waiting groups without pods or PodGroups and group records whose attempts are
// all gone; it keeps the rest.
func TestPartnerGroupsPruned(t *testing.T) {
	a := members("a", 2)
	w := newWorld(t, groupArgs(), cliqueNodes("c4", "", 4), a, partnerPG("a", 2, "grp", "2", ""))
	w.pl.ledger.GroupWaits("ns/grp", plan.GroupIncomplete)
	w.pl.ledger.GroupWaits("ns/gone", plan.GroupIncomplete)
	w.pl.ledger.RecordGroup("ns/old", "ns/x", 41)
	w.pl.ledger.RecordGroup("ns/old", "ns/y", 42)
	_, st := w.preFilter(a[0]) // waits for b: a is not pinned, nothing recorded
	if st.IsSuccess() {
		t.Fatal("a planned without its partner")
	}
	w.pl.pruneGroups()
	got := w.pl.ledger.WaitingGroups()
	if len(got) != 1 || got[0] != "ns/grp" {
		t.Errorf("waiting groups %v, want [ns/grp]", got)
	}
	if w.pl.ledger.GroupRecords() != 0 {
		t.Errorf("stale group record kept")
	}
}

// A waiting group's members are woken when the reason changes: the partners start to
// disagree (so the parked members report it), then agree and complete.
func TestPartnerGroupWakesOnReasonChange(t *testing.T) {
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), cliqueNodes("c4", "", 4), a, partnerPG("a", 2, "grp", "2", ""))
	if _, st := w.preFilter(a[0]); !strings.HasPrefix(st.Message(), "waiting for placement group ns/grp: ") {
		t.Fatalf("PreFilter = %q", st.Message())
	}
	bad := partnerPG("b", 2, "grp", "3", "")
	w.putPodGroup(bad)
	w.addPod(b[0])
	w.addPod(b[1])
	w.h.activated = nil
	if _, st := w.preFilter(b[0]); st.Message() != "placement group ns/grp: PodGroups disagree on ome.io/placement-group-size" {
		t.Fatalf("PreFilter(b-0) = %q", st.Message())
	}
	if got := sortedActivated(w); !slices.Equal(got, []string{"ns/a-0", "ns/a-1", "ns/b-1"}) {
		t.Errorf("activated %v on the new reason", got)
	}
	w.h.activated = nil
	if _, st := w.preFilter(a[0]); !strings.Contains(st.Message(), "disagree") || len(w.h.activated) != 0 {
		t.Errorf("same reason: %q, activated %v (want none)", st.Message(), w.h.activated)
	}
	good := bad.DeepCopy()
	good.Annotations[testGroupLabel+gang.GroupSizeSuffix] = "2"
	if err := w.pgs.Update(good); err != nil {
		t.Fatal(err)
	}
	w.mustPin(b[0])
	if got := sortedActivated(w); !slices.Equal(got, []string{"ns/a-0", "ns/a-1", "ns/b-1"}) {
		t.Errorf("activated %v on completion", got)
	}
}

func sortedActivated(w *world) []string {
	got := slices.Clone(w.h.activated)
	slices.Sort(got)
	return got
}

// A partner whose pin goes stale re-plans with its group: zone A holds partners a (rack r1)
// and b (rack r2); a-0 waits at Permit in zone A when one of b's nodes is deleted. b's pin
// has lost its room, and zone A has none left for b, so b-0 must not be placed at all, and
// in particular not on zone B's free rack r1, away from a.
func TestPartnerStalePinReplansWithItsGroup(t *testing.T) {
	w, a, b := zoneGroupOfTwo(t)

	c := w.mustPin(a[0])
	cands := c.res.NodeNames.UnsortedList()
	sort.Strings(cands)
	if st := c.reserveOn(cands[0]); st.Code() != fwk.Wait {
		t.Fatalf("a-0 Permit = %v, want Wait", st)
	}
	pb, ok := w.pl.ledger.Commitment("ns/b")
	if !ok || pb.Within.Value != "A" {
		t.Fatalf("b pinned = %v within %v, want zone A", ok, pb.Within)
	}
	var kept []*v1.Node
	gone := false
	for _, n := range w.nodes {
		if !gone && n.Labels[testKey] == pb.Domain && n.Labels[testZoneKey] == "A" {
			gone = true // one of b's nodes is deleted
			continue
		}
		kept = append(kept, n)
	}
	w.nodes = kept
	w.resnap(assumed(a[0], cands[0]))

	cb, st := w.preFilter(b[0])
	if st.IsSuccess() {
		got := cb.res.NodeNames.UnsortedList()
		t.Fatalf("b-0 PreFilter placed it on %v (zones %v), want it to wait for room in zone A", got, w.zoneOfNodes(got))
	}
	if pb, ok := w.pl.ledger.Commitment("ns/b"); ok && pb.Within.Value != "A" {
		t.Errorf("b re-pinned to %s within %v, want no pin outside zone A", pb.Domain, pb.Within)
	}
}
