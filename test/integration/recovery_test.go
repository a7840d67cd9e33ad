package integration

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Adoption waits while another forming gang reserves the room the adopted domain has left
// ("adopted domain ... is reserved for another forming gang", counted reserved), then adopts
// once that gang gives the room back.
func TestAdoptionWaitsForAnotherGangsHold(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 4, 1)
	e.podGroup("g1", 3, domainKey, 120)
	e.bindMember("g1-0", "g1", a[0], 1)
	e.bindMember("g1-1", "g1", a[1], 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g2", 2, domainKey, 120)
	e.waitWithGatedSibling("g2", "g2-0", "g2-1", true)
	reserved := map[string]string{"result": "reserved"}
	before := metric(t, "ome_scheduler_gang_pin_total", reserved)
	e.pod(devenv.PodSpec{Name: "g1-2", Group: "g1", GPUs: 1})
	e.message("g1-2", "adopted domain a for gang "+e.ns+"/g1 is reserved for another forming gang", 20*time.Second)
	if metric(t, "ome_scheduler_gang_pin_total", reserved) <= before {
		t.Fatal("pin_total{reserved} did not grow")
	}
	// g2 goes away (its waiting member is rejected, its reservation released): g1 adopts.
	e.deletePod("g2-1")
	e.deletePod("g2-0")
	got := e.bound(20*time.Second, "g1-2")
	if d := e.labelOf(got["g1-2"], domainKey); d != "a" {
		t.Fatalf("g1-2 in %s, want a", d)
	}
}

// A committed gang loses two members; the first replacement waits at Permit until the
// second has a node, then both bind together in the gang's domain.
func TestReplacementsRejoinCommittedGang(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 3, 1)
	e.domain("b", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 3, domainKey, 120)
	pods := e.gang("g", 3, 1, true)
	got := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in %s, want a", d)
	}
	e.deletePod(pods[1])
	e.deletePod(pods[2])
	// Let the scheduler's cache drop both members before the replacements arrive (with one
	// deletion seen, a single replacement would rightly complete the gang on its own).
	time.Sleep(time.Second)
	// The gated replacement exists first, so g-r1's first attempt sees the gang complete (a
	// gated pod never runs PreFilter itself, so it could not wake g-r1 before its gate lifts).
	gw := newGateWatch(t)
	e.pod(devenv.PodSpec{Name: "g-r2", Group: "g", GPUs: 1, Apart: true, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: "g-r1", Group: "g", GPUs: 1, Apart: true})
	if !gw.waited() {
		t.Fatalf("g-r1 never waited at Permit; its messages: %q", devenv.FailedSchedulingMessages(e.ctx, cp.Client, e.ns, "g-r1"))
	}
	e.staysPending(2*time.Second, "g-r1")
	e.ungate("g-r2")
	got = e.bound(20*time.Second, pods[0], "g-r1", "g-r2")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacements in %s, want a", d)
	}
}

// A member vetoed by another filter in every domain moves on promptly to untried
// domains (domain_failed), parks on the sole remaining fit, and after the lap wraps starts
// over.
func TestFailedDomainsLap(t *testing.T) {
	e := newEnv(t)
	var nodes []string
	for _, d := range []string{"x", "y", "z"} {
		nodes = append(nodes, e.domain(d, 1, 1)...)
	}
	// A blocker on every node; the member refuses to share a node with one.
	for i, n := range nodes {
		name := fmt.Sprintf("blocker-%d", i)
		e.pod(devenv.PodSpec{Name: name, SchedulerName: "other", Labels: map[string]string{"blocker": "yes"}})
		if err := devenv.BindPod(e.ctx, cp.Client, e.ns, name, n); err != nil {
			t.Fatal(err)
		}
	}
	e.startScheduler(devenv.Profile{})
	failed := map[string]string{"trigger": "domain_failed"}
	base := metric(t, "ome_scheduler_gang_activation_total", failed)
	e.podGroup("g", 1, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1, Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: labelSelector("blocker", "yes"), TopologyKey: v1.LabelHostname}},
	}}})
	e.message("g-0", "gang reservation released after all candidate nodes were filtered", 20*time.Second)
	waitMetric(t, "ome_scheduler_gang_activation_total", failed, base+2, 20*time.Second)
	// z is then the only fit: a sole fit does not activate, the pod parks.
	time.Sleep(2 * time.Second)
	if d := metric(t, "ome_scheduler_gang_activation_total", failed) - base; d != 2 {
		t.Fatalf("domain_failed activations %v after x, y, z, want 2", d)
	}
	// A node change wakes the pod: every domain failed, the lap wraps and x, y are tried
	// again (+1 each), then z is the sole fit once more (+0).
	e.updateNodeLabel(nodes[0], "example.com/poke", "1")
	waitMetric(t, "ome_scheduler_gang_activation_total", failed, base+4, 20*time.Second)
	time.Sleep(2 * time.Second)
	if d := metric(t, "ome_scheduler_gang_activation_total", failed) - base; d != 4 {
		t.Fatalf("domain_failed activations %v after the second lap, want 4", d)
	}
	e.staysPending(time.Second, "g-0")
}

// Lowering minMember wakes the parked member exactly once, and it binds.
func TestMinMemberChangeActivatesOnce(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1})
	e.message("g-0", "waiting for all PodGroup member templates for "+e.ns+"/g", 20*time.Second)
	change := map[string]string{"trigger": "podgroup_change"}
	before := metric(t, "ome_scheduler_gang_activation_total", change)
	e.updatePodGroup("g", func(pg *schedv1alpha1.PodGroup) { pg.Spec.MinMember = 1 })
	e.bound(10*time.Second, "g-0")
	time.Sleep(500 * time.Millisecond)
	if d := metric(t, "ome_scheduler_gang_activation_total", change) - before; d != 1 {
		t.Fatalf("podgroup_change activations %v, want exactly 1", d)
	}
}

// GC releases the pin of a gang whose pods are gone (the pinned_groups gauge drops).
func TestGCReleasesDeadGangs(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	args := `podGroupTopologyKeyAnnotation: "ome.io/topology-key"
defaultPermitTimeoutSeconds: 600
gcIntervalSeconds: 1`
	e.startScheduler(devenv.Profile{Args: args})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	e.bound(20*time.Second, pods...)
	if v := metric(t, "ome_scheduler_pinned_groups", nil); v != 1 {
		t.Fatalf("pinned_groups %v after the gang bound, want 1", v)
	}
	for _, p := range pods {
		e.deletePod(p)
	}
	waitMetric(t, "ome_scheduler_pinned_groups", nil, 0, 10*time.Second)
}

// CRD absent at start: standalone pods schedule, gang pods park with "PodGroup ... not
// resolvable yet"; after a late install the same process places the gang without a restart.
func TestLateCRDInstall(t *testing.T) {
	plane, err := devenv.Start(devenv.Options{WithoutCRD: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop) // runs after the env's cleanup: the scheduler stops first
	e := newEnvOn(t, plane)
	e.domain("a", 2, 1)
	args := `podGroupTopologyKeyAnnotation: "ome.io/topology-key"
defaultPermitTimeoutSeconds: 600
podGroupSyncTimeoutSeconds: 2
gcIntervalSeconds: 60`
	start := time.Now()
	e.startScheduler(devenv.Profile{Args: args})
	t.Logf("scheduler started after %s", time.Since(start))
	e.pod(devenv.PodSpec{Name: "solo", CPU: "1"})
	e.bound(30*time.Second, "solo")
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "PodGroup "+e.ns+"/g not resolvable yet", 20*time.Second)
	t.Logf("gang parked after %s", time.Since(start))
	if err := plane.InstallCRD(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("CRD installed after %s", time.Since(start))
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := plane.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, devenv.NewPodGroup(e.ns, "g", 2, domainKey, 60), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create PodGroup after CRD install: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("PodGroup created after %s", time.Since(start))
	got := e.bound(60*time.Second, pods...)
	t.Logf("gang bound after %s", time.Since(start))
	e.oneDomain(got, domainKey)
}

func waitMetric(t *testing.T, name string, labels map[string]string, want float64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := metric(t, name, labels)
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, v, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
