package gangpack

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Partner placement groups at the plugin level: the gate that waits for every partner (and
// wakes them), the group's placement, Permit across partners, adoption of a bound partner.
// partners_*_test.go cover the rest by concern.

const (
	testGroupLabel = "ome.io/placement-group"
	testZoneKey    = "example.com/zone"
)

func groupArgs() *gang.Args {
	a := testArgs()
	a.PlacementGroupLabel = testGroupLabel
	return a
}

// partnerPG is a PodGroup of group grp with the size annotation (and, when groupKey is
// set, the group topology-key annotation).
func partnerPG(name string, minMember int32, grp, size, groupKey string) *schedv1alpha1.PodGroup {
	pg := podGroup(name, minMember)
	pg.Labels = map[string]string{testGroupLabel: grp}
	pg.Annotations = map[string]string{testGroupLabel + gang.GroupSizeSuffix: size}
	if groupKey != "" {
		pg.Annotations[testGroupLabel+gang.GroupTopologySuffix] = groupKey
	}
	return pg
}

// cliqueNodes lists count one-GPU nodes of clique (in zone when not "").
func cliqueNodes(clique, zone string, count int) []*v1.Node {
	var out []*v1.Node
	for i := 0; i < count; i++ {
		n := testNode(fmt.Sprintf("%s-%d", clique, i), clique, 1)
		if zone != "" {
			n.Labels[testZoneKey] = zone
		}
		out = append(out, n)
	}
	return out
}

func members(gang string, n int) []*v1.Pod {
	var out []*v1.Pod
	for i := 0; i < n; i++ {
		out = append(out, gangMember(fmt.Sprintf("%s-%d", gang, i), gang, 1))
	}
	return out
}

func groupCounter(t *testing.T, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.GroupTotal.WithLabelValues(result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// domainOf returns the clique of the named nodes, failing if they span several.
func domainOf(t *testing.T, nodes []string) string {
	t.Helper()
	d := ""
	for _, n := range nodes {
		c := n[:strings.LastIndex(n, "-")]
		if d != "" && c != d {
			t.Fatalf("nodes %v span several cliques", nodes)
		}
		d = c
	}
	return d
}

// formGroup schedules the pods in order, registering each waiter, and returns the waiters
// and the last pod's Permit status.
func (w *world) formGroup(pods []*v1.Pod) (map[string]*fakeWaiter, *fwk.Status, map[string]string) {
	w.t.Helper()
	used, placed := map[string]bool{}, []*v1.Pod{}
	waiters, nodeOf := map[string]*fakeWaiter{}, map[string]string{}
	var st *fwk.Status
	for _, p := range pods {
		var node string
		node, st = w.scheduleOne(p, used, &placed)
		nodeOf[p.Name] = node
		if st.Code() == fwk.Wait {
			waiters[p.Name] = w.h.register(p)
		}
	}
	return waiters, st, nodeOf
}

// G1: two partners of 2 members, cliques of 4, 2 and 3 free nodes: all four go to the
// 4-node clique, though each alone would best-fit the 2-node clique; no member binds before
// the last one of the group arrives, then all are admitted together.
func TestPartnerGroupBestFitOverTotal(t *testing.T) {
	metrics.Register()
	nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2), cliqueNodes("c3", "", 3))
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	placedBefore := groupCounter(t, metrics.GroupPlaced)

	c := w.mustPin(a[0])
	if got := domainOf(t, c.res.NodeNames.UnsortedList()); got != "c4" {
		t.Fatalf("a-0 candidates in %s, want c4", got)
	}
	pa, _ := w.pl.ledger.Commitment("ns/a")
	pb, okb := w.pl.ledger.Commitment("ns/b")
	if pa.Domain != "c4" || !okb || pb.Domain != "c4" || pa.Reserved.Members() != 2 || pb.Reserved.Members() != 2 {
		t.Fatalf("pins a=%+v b=%+v, want both in c4 reserving 2 each", pa, pb)
	}
	for n := range pa.Reserved {
		if _, shared := pb.Reserved[n]; shared {
			t.Errorf("node %s reserved by both partners (one GPU)", n)
		}
	}
	if got := groupCounter(t, metrics.GroupPlaced) - placedBefore; got != 1 {
		t.Errorf("placement_group_total{placed} moved by %v, want 1", got)
	}

	waiters, last, nodeOf := w.formGroup(slices.Concat(a, b))
	if !last.IsSuccess() {
		t.Fatalf("last member's Permit = %v, want success", last)
	}
	if len(waiters) != 3 {
		t.Fatalf("%d waiters, want 3 (a-1 waits although a is complete)", len(waiters))
	}
	for name, wt := range waiters {
		if v := wt.await(testWait); v != "allowed" {
			t.Errorf("%s: %q, want allowed", name, v)
		}
	}
	var used []string
	for _, n := range nodeOf {
		used = append(used, n)
	}
	if d := domainOf(t, used); d != "c4" {
		t.Errorf("members in %s, want c4", d)
	}
	if w.pl.ledger.Stats().GroupRecords != 0 {
		t.Errorf("group record kept after admission")
	}
}

// G2: one partner missing: the other waits naming the group; once the partner's PodGroup and
// members exist, the planning that finds the group complete wakes every partner's members.
func TestPartnerGroupGateWaitsForPartners(t *testing.T) {
	nodes := cliqueNodes("c4", "", 4)
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, a, partnerPG("a", 2, "grp", "2", ""))
	_, st := w.preFilter(a[0])
	if want := "waiting for placement group ns/grp: 1 of 2 PodGroups ready"; st.Message() != want {
		t.Fatalf("PreFilter = %q, want %q", st.Message(), want)
	}
	w.putPodGroup(partnerPG("b", 2, "grp", "2", ""))
	w.addPod(b[0])
	_, st = w.preFilter(a[0])
	if want := "waiting for placement group ns/grp: 1 of 2 PodGroups ready"; st.Message() != want {
		t.Fatalf("PreFilter with b incomplete = %q, want %q", st.Message(), want)
	}
	if _, ok := w.pl.ledger.Commitment("ns/a"); ok {
		t.Fatal("a pinned before its group is complete")
	}
	w.addPod(b[1])
	w.h.activated = nil
	c := w.mustPin(a[0])
	if len(c.res.NodeNames) == 0 {
		t.Fatal("no candidates")
	}
	got := slices.Clone(w.h.activated)
	sort.Strings(got)
	if want := []string{"ns/a-1", "ns/b-0", "ns/b-1"}; !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
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

// G3: no clique holds both partners (3-node cliques, 2 + 2 members): nothing is pinned,
// though each partner alone would fit, and the message names the best domain.
func TestPartnerGroupNoFit(t *testing.T) {
	metrics.Register()
	nodes := slices.Concat(cliqueNodes("c1", "", 3), cliqueNodes("c2", "", 3))
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	before := groupCounter(t, metrics.GroupNoFit)
	for _, p := range []*v1.Pod{a[0], b[1]} {
		_, st := w.preFilter(p)
		if want := "no domain has room for placement group ns/grp: the best domain c1 has room for 3 of 4 members"; st.Message() != want {
			t.Errorf("PreFilter(%s) = %q, want %q", p.Name, st.Message(), want)
		}
	}
	if w.pl.ledger.Stats().Pins != 0 {
		t.Errorf("%d pins, want none", w.pl.ledger.Stats().Pins)
	}
	if got := groupCounter(t, metrics.GroupNoFit) - before; got != 2 {
		t.Errorf("placement_group_total{no_fit} moved by %v, want 2", got)
	}
}

// G4: group key zone, gang key clique: each partner whole in one clique, both in the one zone
// that has two cliques with room.
func TestPartnerGroupCoarserGroupKey(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c1", "z1", 2), cliqueNodes("c2", "z2", 2), cliqueNodes("c3", "z2", 2))
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	waiters, last, nodeOf := w.formGroup(slices.Concat(a, b))
	if !last.IsSuccess() {
		t.Fatalf("last Permit = %v", last)
	}
	for name, wt := range waiters {
		if v := wt.await(testWait); v != "allowed" {
			t.Errorf("%s: %q", name, v)
		}
	}
	da := domainOf(t, []string{nodeOf["a-0"], nodeOf["a-1"]})
	db := domainOf(t, []string{nodeOf["b-0"], nodeOf["b-1"]})
	if da == db || (da != "c2" && da != "c3") || (db != "c2" && db != "c3") {
		t.Errorf("a in %s, b in %s; want c2 and c3 (zone z2)", da, db)
	}
}

// Rule 5: a bound partner anchors the group: the missing partner is placed in its domain
// although alone it would best-fit elsewhere, and Permit admits it (the bound partner has
// its minMember members bound).
func TestPartnerGroupAdoptsBoundPartner(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c5", "", 5), cliqueNodes("c2", "", 2))
	a, b := members("a", 2), members("b", 2)
	b[0].Spec.NodeName, b[1].Spec.NodeName = "c5-0", "c5-1"
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	waiters, last, nodeOf := w.formGroup(a)
	if !last.IsSuccess() {
		t.Fatalf("a-1 Permit = %v, want success", last)
	}
	if v := waiters["a-0"].await(testWait); v != "allowed" {
		t.Errorf("a-0: %q", v)
	}
	if d := domainOf(t, []string{nodeOf["a-0"], nodeOf["a-1"]}); d != "c5" {
		t.Errorf("a in %s, want c5 (b's domain)", d)
	}
}
