package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Placement-quality metrics (docs/operations.md): every test reads the process registry
// before and after a scenario.

const (
	placementTotal = "ome_scheduler_gang_placement_total"
	formationHist  = "ome_scheduler_gang_formation_duration_seconds"
	memberRoom     = "ome_scheduler_domain_member_room"
	domainHeld     = "ome_scheduler_domain_held"
	stranded       = "ome_scheduler_stranded_capacity"
	largestGang    = "ome_scheduler_largest_placeable_gang"
)

var (
	singleDomain = map[string]string{"outcome": "single_domain"}
	splitOutcome = map[string]string{"outcome": "split"}
	splitRefused = map[string]string{"outcome": "split_refused"}
)

func inDomain(d string) map[string]string {
	return map[string]string{"topology_key": domainKey, "domain": d}
}

// histogramSum returns the sample sum of an unlabelled histogram.
func histogramSum(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetHistogram() != nil {
			return mf.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("histogram %s not found", name)
	return 0
}

// A placed gang counts single_domain exactly once (at the admitting member's Permit, after the
// snapshot check) and observes one formation duration; split stays put.
func TestQualityPlacedGangCountsOnce(t *testing.T) {
	e := newEnv(t)
	e.domain("qa", 2, 1)
	e.domain("qb", 3, 1)
	e.startScheduler(devenv.Profile{})
	single0, split0 := metric(t, placementTotal, singleDomain), metric(t, placementTotal, splitOutcome)
	count0, sum0 := metric(t, formationHist, nil), histogramSum(t, formationHist)
	e.podGroup("g", 2, domainKey, 60)
	start := time.Now()
	pods := e.gang("g", 2, 1, true)
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "qa" {
		t.Fatalf("gang in %s, want qa", d)
	}
	elapsed := time.Since(start).Seconds()
	time.Sleep(time.Second) // nothing else may count
	if d := metric(t, placementTotal, singleDomain) - single0; d != 1 {
		t.Fatalf("placement_total{single_domain} grew by %v, want 1", d)
	}
	if d := metric(t, placementTotal, splitOutcome) - split0; d != 0 {
		t.Fatalf("placement_total{split} grew by %v", d)
	}
	if d := metric(t, formationHist, nil) - count0; d != 1 {
		t.Fatalf("formation histogram count grew by %v, want 1", d)
	}
	// creationTimestamp has one-second resolution: allow one second on top of the wall time.
	if obs := histogramSum(t, formationHist) - sum0; obs < 0 || obs > elapsed+1 {
		t.Fatalf("formation duration %.3fs, want within [0, %.3f]", obs, elapsed+1)
	}
}

// A forming gang holds its domain: held=1 while a member waits at Permit with its sibling
// gated, 0 after the sibling's Reserve commits the gang; member room is the planning's.
func TestQualityHeldDomainGauges(t *testing.T) {
	e := newEnv(t)
	e.domain("qa", 2, 1)
	e.domain("qb", 3, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 120)
	e.waitWithGatedSibling("g", "g-0", "g-1", true)
	for d, want := range map[string]float64{"qa": 1, "qb": 0} {
		if got := metric(t, domainHeld, inDomain(d)); got != want {
			t.Fatalf("domain_held{%s} = %v while g forms in qa, want %v", d, got, want)
		}
	}
	// Room in members of g's shape (1 GPU, one per node), over all nodes, before g-0 took a node.
	for d, want := range map[string]float64{"qa": 2, "qb": 3} {
		if got := metric(t, memberRoom, inDomain(d)); got != want {
			t.Fatalf("domain_member_room{%s} = %v, want %v", d, got, want)
		}
	}
	if got := metric(t, largestGang, map[string]string{"topology_key": domainKey}); got != 3 {
		t.Fatalf("largest_placeable_gang = %v, want 3", got)
	}
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	if d := e.oneDomain(got, domainKey); d != "qa" {
		t.Fatalf("gang in %s, want qa", d)
	}
	waitMetric(t, domainHeld, inDomain("qa"), 0, 10*time.Second)
	if got := metric(t, domainHeld, inDomain("qb")); got != 0 {
		t.Fatalf("domain_held{qb} = %v, want 0", got)
	}
}

// Fragmentation: one free GPU in each of two domains, a gang of 2 that must stay apart parks
// with "no domain has room for gang"; both free GPUs are stranded and the largest placeable
// gang is 1. A domain that disappears loses its per-domain series at the next planning.
func TestQualityStrandedCapacity(t *testing.T) {
	e := newEnv(t)
	a := e.domain("qa", 2, 1)
	b := e.domain("qb", 2, 1)
	e.occupy("busy-a", a[0], 1)
	e.occupy("busy-b", b[0], 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "no domain has room for gang "+e.ns+"/g", 20*time.Second)
	waitMetric(t, stranded, map[string]string{"topology_key": domainKey, "resource": "nvidia.com/gpu"}, 2, 10*time.Second)
	waitMetric(t, largestGang, map[string]string{"topology_key": domainKey}, 1, 10*time.Second)
	for _, d := range []string{"qa", "qb"} {
		if got := metric(t, memberRoom, inDomain(d)); got != 1 {
			t.Fatalf("domain_member_room{%s} = %v, want 1", d, got)
		}
		if got := metric(t, domainHeld, inDomain(d)); got != 0 {
			t.Fatalf("domain_held{%s} = %v, want 0 (nothing forms)", d, got)
		}
	}
	e.staysPending(2*time.Second, pods...)

	// Domain qb goes away: the node deletions requeue the gang, whose next planning over all
	// nodes no longer sees qb.
	for _, n := range b {
		if err := e.cp.Client.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete node %s: %v", n, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, room := lookupMetric(t, memberRoom, inDomain("qb"))
		_, held := lookupMetric(t, domainHeld, inDomain("qb"))
		if !room && !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series of the deleted domain qb still exported (member_room %v, held %v)", room, held)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := metric(t, memberRoom, inDomain("qa")); got != 1 {
		t.Fatalf("domain_member_room{qa} = %v, want 1", got)
	}
	waitMetric(t, stranded, map[string]string{"topology_key": domainKey, "resource": "nvidia.com/gpu"}, 1, 10*time.Second)
}
