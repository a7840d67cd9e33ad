package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const rackKey = "topology.ome.io/rack"

// spreadOn is a hard spread constraint over key for pods labelled app=<app>,role=leader.
func spreadOn(key, app string, when v1.UnsatisfiableConstraintAction) []v1.TopologySpreadConstraint {
	return []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app, "role": "leader"}},
	}}
}

// instance creates a leader+workers gang: the leader carries the spread constraint.
func (e *env) instance(name, app string, workers int, spread []v1.TopologySpreadConstraint, gates ...string) []string {
	e.t.Helper()
	e.podGroup(name, int32(1+workers), devenv.CliqueKey, 120)
	leader := name + "-leader"
	e.pod(devenv.PodSpec{Name: leader, Group: name, GPUs: 1, Apart: true, Spread: spread, Gates: gates,
		Labels: map[string]string{"app": app, "role": "leader"}})
	pods := []string{leader}
	for i := 0; i < workers; i++ {
		w := fmt.Sprintf("%s-worker-%d", name, i)
		e.pod(devenv.PodSpec{Name: w, Group: name, GPUs: 1, Apart: true, Labels: map[string]string{"app": app, "role": "worker"}})
		pods = append(pods, w)
	}
	return pods
}

// cliques creates cliques of 2 one-GPU nodes each in the given zones (clique name → zone).
func (e *env) cliques(zones map[string]string) map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	for c, z := range zones {
		for i := 0; i < 2; i++ {
			out[c] = append(out[c], e.node(devenv.NodeSpec{Name: fmt.Sprintf("%s-%d", c, i), GPUs: 1,
				Labels: map[string]string{devenv.CliqueKey: c, devenv.ZoneKey: z}}))
		}
	}
	return out
}

func (e *env) noMessage(pod, substr string) {
	e.t.Helper()
	for _, m := range devenv.FailedSchedulingMessages(e.ctx, e.cp.Client, e.ns, pod) {
		if strings.Contains(m, substr) {
			e.t.Fatalf("pod %s has message %q containing %q", pod, m, substr)
		}
	}
}

// Two single-pod Instances (standalone) with Required zone spread land in two zones.
func TestSpreadStandaloneInstancesAcrossZones(t *testing.T) {
	e := newEnv(t)
	e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-b"})
	e.startScheduler(devenv.Profile{})
	for i := 0; i < 2; i++ {
		e.pod(devenv.PodSpec{Name: fmt.Sprintf("solo-%d", i), GPUs: 1, Spread: spreadOn(devenv.ZoneKey, "qwen", v1.DoNotSchedule),
			Labels: map[string]string{"app": "qwen", "role": "leader"}})
		e.bound(20*time.Second, fmt.Sprintf("solo-%d", i))
	}
	got := e.bound(time.Second, "solo-0", "solo-1")
	if z0, z1 := e.labelOf(got["solo-0"], devenv.ZoneKey), e.labelOf(got["solo-1"], devenv.ZoneKey); z0 == z1 {
		t.Fatalf("both Instances in zone %s", z0)
	}
}

// Leader+worker Instances each inside one clique, leaders spread across zones by a
// DoNotSchedule constraint; the domain is chosen after the spread filter (no "gang reservation
// released after all candidate nodes were filtered");
// an Instance that can only break the spread stays Pending and binds once a clique in the
// other zone frees.
func TestSpreadGangsAcrossZones(t *testing.T) {
	e := newEnv(t)
	e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-a", "c3": "zone-a", "c4": "zone-b"})
	e.startScheduler(devenv.Profile{})
	afterFilter := map[string]string{"result": "pinned_after_filter"}
	before := metric(t, "ome_scheduler_gang_pin_total", afterFilter)
	spread := spreadOn(devenv.ZoneKey, "qwen", v1.DoNotSchedule)

	zoneOf := func(placed map[string]string) string {
		return e.labelOf(placed[firstKey(placed)], devenv.ZoneKey)
	}
	var instances [][]string
	zones := map[string]int{}
	for i := 1; i <= 3; i++ {
		var pods []string
		if i == 1 {
			// With the leader held back by a scheduling gate, the worker waits for it.
			pods = e.instance("i1", "qwen", 1, spread, "example.com/later")
			e.message(pods[1], "waiting for gang spread anchor "+e.ns+"/i1-leader to be placed", 20*time.Second)
			e.staysPending(time.Second, pods[1])
			e.ungate(pods[0])
		} else {
			pods = e.instance(fmt.Sprintf("i%d", i), "qwen", 1, spread)
		}
		got := e.bound(20*time.Second, pods...)
		e.oneDomain(got, devenv.CliqueKey)
		e.distinctNodes(got)
		zones[zoneOf(got)]++
		instances = append(instances, pods)
		e.noMessage(pods[0], "gang reservation released after all candidate nodes were filtered")
	}
	if zones["zone-a"] != 2 || zones["zone-b"] != 1 {
		t.Fatalf("Instances per zone %v, want zone-a 2 and zone-b 1 (maxSkew 1)", zones)
	}
	if d := metric(t, "ome_scheduler_gang_pin_total", afterFilter) - before; d != 3 {
		t.Fatalf("pin_total{pinned_after_filter} grew by %v, want 3", d)
	}
	// The 4th Instance would make zone-a 3 vs zone-b 1; zone-b's only clique is taken.
	i4 := e.instance("i4", "qwen", 1, spread)
	msg := e.message(i4[0], "didn't match pod topology spread constraints", 20*time.Second)
	if !strings.Contains(msg, "didn't satisfy plugin(s) [OMEGangPack]") {
		t.Fatalf("leader message %q does not count the nodes outside the plan", msg)
	}
	e.staysPending(2*time.Second, i4...)
	e.noMessage(i4[0], "gang reservation released after all candidate nodes were filtered")
	// Free the zone-b Instance: i4 binds there without any manual step.
	for _, pods := range instances {
		got := e.bound(time.Second, pods...)
		if zoneOf(got) == "zone-b" {
			for _, p := range pods {
				e.deletePod(p)
			}
		}
	}
	got := e.bound(20*time.Second, i4...)
	if z := zoneOf(got); z != "zone-b" {
		t.Fatalf("4th Instance in %s, want zone-b", z)
	}
	e.oneDomain(got, devenv.CliqueKey)
}

// Spread on hostname with rack packing: the gang lands in the rack whose nodes keep the
// skew, directly, without a reservation released after filtering.
func TestHostnameSpreadWithRackPacking(t *testing.T) {
	e := newEnv(t)
	var a []string
	for i := 0; i < 2; i++ {
		a = append(a, e.node(devenv.NodeSpec{Name: fmt.Sprintf("ra-%d", i), GPUs: 2, Labels: map[string]string{rackKey: "a"}}))
		e.node(devenv.NodeSpec{Name: fmt.Sprintf("rb-%d", i), GPUs: 2, Labels: map[string]string{rackKey: "b"}})
	}
	for i, n := range a {
		e.pod(devenv.PodSpec{Name: fmt.Sprintf("old-%d", i), SchedulerName: "other", Labels: map[string]string{"app": "qwen", "role": "leader"}})
		if err := devenv.BindPod(e.ctx, cp.Client, e.ns, fmt.Sprintf("old-%d", i), n); err != nil {
			t.Fatal(err)
		}
	}
	e.startScheduler(devenv.Profile{})
	unwinds := metric(t, "ome_scheduler_gang_unwind_total", nil)
	e.podGroup("g", 2, rackKey, 60)
	e.pod(devenv.PodSpec{Name: "g-leader", Group: "g", GPUs: 1, Apart: true, Spread: spreadOn(v1.LabelHostname, "qwen", v1.DoNotSchedule),
		Labels: map[string]string{"app": "qwen", "role": "leader"}})
	e.pod(devenv.PodSpec{Name: "g-worker", Group: "g", GPUs: 1, Apart: true, Labels: map[string]string{"app": "qwen", "role": "worker"}})
	got := e.bound(20*time.Second, "g-leader", "g-worker")
	if d := e.oneDomain(got, rackKey); d != "b" {
		t.Fatalf("gang in rack %s, want b", d)
	}
	e.noMessage("g-leader", "gang reservation released after all candidate nodes were filtered")
	if d := metric(t, "ome_scheduler_gang_unwind_total", nil) - unwinds; d != 0 {
		t.Fatalf("unwind_total grew by %v, want 0", d)
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// Preferred (ScheduleAnyway) spread counts for gangs: among equally fitting cliques the one in
// the zone with fewer Instances wins; with gangSoftSpread: false the stock behaviour (no
// effect under the chart's defaults) comes back and the name order decides.
func TestPreferredSpreadBreaksBestFitTies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     string
		wantZone string
	}{
		{"default", "", "zone-b"},
		{"stock", devenv.DefaultArgs + "\ngangSoftSpread: false", "zone-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-a", "c3": "zone-b"})
			// An existing Instance of the component in zone-a, on c1.
			e.pod(devenv.PodSpec{Name: "old-leader", SchedulerName: "other", Labels: map[string]string{"app": "qwen", "role": "leader"}, GPUs: 1})
			if err := devenv.BindPod(e.ctx, cp.Client, e.ns, "old-leader", c["c1"][0]); err != nil {
				t.Fatal(err)
			}
			e.startScheduler(devenv.Profile{Args: tc.args})
			pods := e.instance("i1", "qwen", 1, spreadOn(devenv.ZoneKey, "qwen", v1.ScheduleAnyway))
			got := e.bound(20*time.Second, pods...)
			e.oneDomain(got, devenv.CliqueKey)
			if z := e.labelOf(got[pods[0]], devenv.ZoneKey); z != tc.wantZone {
				t.Fatalf("Instance in %s, want %s", z, tc.wantZone)
			}
		})
	}
}
