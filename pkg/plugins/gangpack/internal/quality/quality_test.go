package quality

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

const gpu = "nvidia.com/gpu"

func TestStrandedUnits(t *testing.T) {
	rooms := map[string]int{"a": 3, "b": 1, "c": 0}
	free := map[string]int64{"a": 3, "b": 1, "c": 2}
	for threshold, want := range map[int]int64{0: 0, 1: 2, 2: 3, 4: 6} {
		if got := StrandedUnits(rooms, free, threshold); got != want {
			t.Errorf("StrandedUnits(threshold %d) = %d, want %d", threshold, got, want)
		}
	}
}

func TestPlacementOutcome(t *testing.T) {
	cases := []struct {
		placed map[string]string
		pinned string
		want   string
	}{
		{map[string]string{"g-0": "a", "g-1": "a"}, "a", metrics.OutcomeSingleDomain},
		{map[string]string{"g-0": "a"}, "a", metrics.OutcomeSingleDomain},
		{map[string]string{"g-0": "a", "g-1": "b"}, "a", metrics.OutcomeSplit},
		{map[string]string{"g-0": "a", "g-1": ""}, "a", metrics.OutcomeSplit}, // a node without the label
		{map[string]string{"g-0": "b", "g-1": "b"}, "a", metrics.OutcomeSplit},
		{map[string]string{"g-0": ""}, "", metrics.OutcomeSplit},
	}
	for _, c := range cases {
		if got := PlacementOutcome(c.placed, c.pinned); got != c.want {
			t.Errorf("PlacementOutcome(%v, %q) = %s, want %s", c.placed, c.pinned, got, c.want)
		}
	}
}

func TestNthCreated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string, sec int, mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	deleted := func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	failed := func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }
	pods := []*v1.Pod{pod("c", 30), pod("a", 10), pod("old", 1, deleted), pod("done", 2, failed), pod("b", 20), pod("d", 40)}
	for n, want := range map[int]int{0: 10, 1: 10, 2: 20, 3: 30, 4: 40, 9: 40} {
		got, ok := NthCreated(pods, n)
		if !ok || !got.Equal(t0.Add(time.Duration(want)*time.Second)) {
			t.Errorf("NthCreated(n=%d) = %v,%v; want +%ds", n, got, ok, want)
		}
	}
	if _, ok := NthCreated([]*v1.Pod{pod("x", 1, deleted)}, 1); ok {
		t.Error("NthCreated without live pods reported a time")
	}
	if got := FormationSeconds(t0.Add(time.Second), t0); got != 0 {
		t.Errorf("negative duration = %v, want 0", got)
	}
	if got := FormationSeconds(t0, t0.Add(1500*time.Millisecond)); got != 1.5 {
		t.Errorf("duration = %v, want 1.5", got)
	}
}

func TestSmallestNeed(t *testing.T) {
	q := New()
	alive := map[string]bool{"ns/small": true, "ns/big": true, "ns/gone": false, "ns/other": true}
	pending := func(g string) bool { return alive[g] }
	q.Pending("k", "ns/big", 6)
	q.Pending("k", "ns/gone", 1)
	q.Pending("other-key", "ns/other", 1)
	if got := q.SmallestNeed("k", "ns/me", 4, pending); got != 4 {
		t.Fatalf("smallestNeed = %d, want 4 (gone gangs ignored, other keys ignored)", got)
	}
	if _, ok := q.pending["k"]["ns/gone"]; ok {
		t.Fatal("a gang without pending members stayed pending")
	}
	q.Pending("k", "ns/small", 2)
	if got := q.SmallestNeed("k", "ns/me", 4, pending); got != 2 {
		t.Fatalf("smallestNeed = %d, want 2", got)
	}
	// The gang being planned uses its current need, not the one it was pending with.
	if got := q.SmallestNeed("k", "ns/small", 3, pending); got != 3 {
		t.Fatalf("SmallestNeed for the pending gang itself = %d, want 3", got)
	}
	q.Bound("ns/small")
	if got := q.SmallestNeed("k", "ns/me", 4, pending); got != 4 {
		t.Fatalf("after unpark smallestNeed = %d, want 4", got)
	}
	q.Bound("ns/other")
	if _, ok := q.pending["other-key"]; ok {
		t.Fatal("empty key map kept")
	}
	// A gone gang with a larger need cannot change the answer: smallestNeed does not look at
	// it, the GC prune forgets it; pending gangs stay.
	alive["ns/gone-big"] = false
	q.Pending("k", "ns/gone-big", 9)
	if got := q.SmallestNeed("k", "ns/me", 4, pending); got != 4 {
		t.Fatalf("smallestNeed with a larger gone gang = %d, want 4", got)
	}
	if _, ok := q.pending["k"]["ns/gone-big"]; !ok {
		t.Fatal("smallestNeed checked a gang whose need could not matter")
	}
	q.PrunePending(pending)
	if _, ok := q.pending["k"]["ns/gone-big"]; ok {
		t.Fatal("PrunePending kept a gang without pending members")
	}
	if _, ok := q.pending["k"]["ns/big"]; !ok {
		t.Fatal("PrunePending dropped a pending gang")
	}
}

// series returns the gauge values of a family by the value of one label, for series whose
// topology_key is key.
func series(t *testing.T, name, key, label string) map[string]float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["topology_key"] == key {
				out[l[label]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestQualityTrackerSeries(t *testing.T) {
	metrics.Register()
	const key = "unit.test/quality"
	q := New()
	s := placement.NewStore()

	q.Record(key, map[string]int{"a": 2, "b": 3, "c": 0}, 3, gpu, true, 5)
	if got, want := series(t, "ome_scheduler_domain_member_room", key, "domain"), map[string]float64{"a": 2, "b": 3, "c": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("member_room = %v, want %v", got, want)
	}
	if got, want := series(t, "ome_scheduler_domain_held", key, "domain"), map[string]float64{"a": 0, "b": 0, "c": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("held = %v, want %v", got, want)
	}
	if got := series(t, "ome_scheduler_largest_placeable_gang", key, "topology_key")[key]; got != 3 {
		t.Fatalf("largest = %v, want 3", got)
	}
	if got := series(t, "ome_scheduler_stranded_capacity", key, "resource")[gpu]; got != 5 {
		t.Fatalf("stranded = %v, want 5", got)
	}

	res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: key, Need: 2, Rooms: map[string]int{"a": 2, "b": 3}})
	if !res.OK || res.Commitment.Domain != "a" {
		t.Fatalf("choose: %+v", res)
	}
	q.HeldChanged(s.HeldDomainRefs())
	if got, want := series(t, "ome_scheduler_domain_held", key, "domain"), map[string]float64{"a": 1, "b": 0, "c": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("held after pin = %v, want %v", got, want)
	}

	// Domains a and c vanish from the latest planning: their member_room series go; a's held
	// series stays while a forming gang holds it, then goes on release.
	q.Record(key, map[string]int{"b": 1, "d": 4}, 4, "", false, 0)
	if got, want := series(t, "ome_scheduler_domain_member_room", key, "domain"), map[string]float64{"b": 1, "d": 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("member_room after shrink = %v, want %v", got, want)
	}
	if got, want := series(t, "ome_scheduler_domain_held", key, "domain"), map[string]float64{"a": 1, "b": 0, "d": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("held after shrink = %v, want %v", got, want)
	}
	if got := series(t, "ome_scheduler_stranded_capacity", key, "resource")[gpu]; got != 5 {
		t.Fatalf("stranded changed by a planning without extended resources: %v", got)
	}
	s.Release("ns/g", placement.AnyID, nil)
	q.HeldChanged(s.HeldDomainRefs())
	if got, want := series(t, "ome_scheduler_domain_held", key, "domain"), map[string]float64{"b": 0, "d": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("held after release = %v, want %v", got, want)
	}
}

// The series of a topology key no planning used for keyRetention are deleted (tenant-chosen
// keys and resource names do not pile up), and a key's stranded series follows its resource.
func TestQualityTrackerForgetsStaleKeys(t *testing.T) {
	metrics.Register()
	const key = "unit.test/stale"
	q := New()
	q.Record(key, map[string]int{"a": 1}, 1, "example.com/old", true, 2)
	q.Record(key, map[string]int{"a": 1}, 1, gpu, true, 3)
	if got, want := series(t, "ome_scheduler_stranded_capacity", key, "resource"), map[string]float64{gpu: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stranded = %v, want %v (the old resource's series deleted)", got, want)
	}
	q.ForgetStaleKeys(time.Now())
	if len(series(t, "ome_scheduler_domain_member_room", key, "domain")) != 1 {
		t.Fatal("a key planned just now lost its series")
	}
	q.ForgetStaleKeys(time.Now().Add(keyRetention + time.Second))
	for _, name := range []string{"ome_scheduler_domain_member_room", "ome_scheduler_domain_held", "ome_scheduler_stranded_capacity", "ome_scheduler_largest_placeable_gang"} {
		if got := series(t, name, key, "topology_key"); len(got) != 0 {
			t.Errorf("%s still has series for the stale key: %v", name, got)
		}
	}
}
