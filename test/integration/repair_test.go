package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Repair in place on a real API server (docs/operations.md §6.8): a bound gang loses members
// to node failures, the test plays the pod garbage collector (the Node object is deleted and
// its pods force-deleted) and the workload controller (replacements are created), and the
// replacements must join the survivors' domain: into free room, by evicting lower-priority
// units inside that domain only, or by waiting, with the gang reported as degraded.

// repairProfile is the chart's configuration with preemption on and a 1 s GC tick, so the
// degraded gauge follows within a second.
var repairProfile = devenv.Profile{Args: strings.Replace(devenv.DefaultArgs, "gcIntervalSeconds: 60", "gcIntervalSeconds: 1", 1) + "\npreemption: true"}

// failNode deletes the node and force-deletes the pods bound to it, as the pod garbage
// collector does for pods of a node that is gone, and returns their names.
func (e *env) failNode(node string) []string {
	e.t.Helper()
	pods, err := e.cp.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cp.Client.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete node %s: %v", node, err)
	}
	var names []string
	for _, p := range pods.Items {
		e.deletePodNow(p.Name)
		names = append(names, p.Name)
	}
	return names
}

// nodeOf returns the member bound to node in placed.
func nodeOf(placed map[string]string, pod string) string { return placed[pod] }

// gangDegradedEvents returns the notes of the GangDegraded events on the PodGroup.
func (e *env) gangDegradedEvents(podGroup string) []string {
	e.t.Helper()
	evs, err := e.cp.Client.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range evs.Items {
		if ev.Reason == "GangDegraded" && ev.Regarding.Kind == "PodGroup" && ev.Regarding.Name == podGroup && ev.Type == "Warning" {
			out = append(out, ev.Note)
		}
	}
	return out
}

// waitMetric waits until the series has the value.
func (e *env) waitMetric(name string, labels map[string]string, want float64, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, _ := lookupMetric(e.t, name, labels)
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s%v = %v after %v, want %v", name, labels, v, timeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A member's node fails and the domain has a spare node: the replacement lands with the
// survivors, not in the emptier domain b.
func TestRepairReplacementJoinsSurvivors(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 4, 1)
	e.domain("b", 6, 1)
	e.startScheduler(repairProfile)
	e.podGroup("g", 3, domainKey, 120)
	pods := e.gang("g", 3, 1, true)
	placed := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(placed, domainKey); d != "a" {
		t.Fatalf("g bound in %s, want a", d)
	}
	lost := e.failNode(nodeOf(placed, pods[1]))
	if len(lost) != 1 || lost[0] != pods[1] {
		t.Fatalf("failed node held %v, want %s", lost, pods[1])
	}
	e.pod(devenv.PodSpec{Name: "g-r1", Group: "g", GPUs: 1, Apart: true})
	got := e.bound(20*time.Second, pods[0], pods[2], "g-r1")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacement in %s, want a with the survivors", d)
	}
	if evs := e.gangDegradedEvents("g"); len(evs) != 0 {
		t.Fatalf("GangDegraded events for a gang repaired at once: %v", evs)
	}
}

// Two members lost at once, the domain's spare nodes held by a lower-priority standalone pod
// and by a member of a lower-priority gang whose other member is in domain b: one preemption
// evicts the pod and the whole gang, both replacements bind in a, the survivors and the free
// nodes of b are untouched.
func TestRepairPreemptsInsideItsDomain(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 6, 1)
	b := e.domain("b", 7, 1)
	e.placedAt("batch", "", a[4], 1, nil)
	e.placedAt("lo-0", "lo", a[5], 1, nil)
	e.placedAt("lo-1", "lo", b[0], 1, nil)
	e.podGroup("lo", 2, domainKey, 60)
	e.startScheduler(repairProfile)
	hi := e.prioGang("hi", 4, 100, false)
	placed := e.bound(20*time.Second, hi...)
	if d := e.oneDomain(placed, domainKey); d != "a" {
		t.Fatalf("hi bound in %s, want a (the tighter domain)", d)
	}
	before, beforeGangs, beforePods := preemptions(t, "gang", "preempted"), victimUnits(t, "gang"), victimUnits(t, "pod")
	e.failNode(nodeOf(placed, hi[0]))
	e.failNode(nodeOf(placed, hi[1]))
	e.prioPod(devenv.PodSpec{Name: "hi-r0", Group: "hi", GPUs: 1}, 100, false)
	e.prioPod(devenv.PodSpec{Name: "hi-r1", Group: "hi", GPUs: 1}, 100, false)
	got := e.bound(60*time.Second, hi[2], hi[3], "hi-r0", "hi-r1")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacements in %s, want a with the survivors", d)
	}
	e.gone(10*time.Second, "batch", "lo-0", "lo-1")
	want := "Preempted by gang " + e.ns + "/hi to place it in domain a"
	evs := e.preemptedEvents()
	if len(evs) != 3 || evs["batch"] != want || evs["lo-0"] != want || evs["lo-1"] != want {
		t.Fatalf("Preempted events %v, want %q on batch, lo-0 and lo-1", evs, want)
	}
	if d := preemptions(t, "gang", "preempted") - before; d != 1 {
		t.Fatalf("preemption_total{gang,preempted} grew by %v, want 1 (both members repaired in one decision)", d)
	}
	if dg, dp := victimUnits(t, "gang")-beforeGangs, victimUnits(t, "pod")-beforePods; dg != 1 || dp != 1 {
		t.Fatalf("victims grew by %v gangs and %v pods, want 1 and 1", dg, dp)
	}
	for _, n := range b[1:] { // domain b's free nodes were never bought
		pods, err := e.cp.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()})
		if err != nil || len(pods.Items) != 0 {
			t.Fatalf("node %s of domain b holds %d pods (err %v)", n, len(pods.Items), err)
		}
	}
}

// The domain holds nothing of lower priority (a lower-priority pod in domain b does not
// count): the replacement waits with the degraded reason, the PodGroup gets one GangDegraded
// warning, the gauge counts the gang; a node added to the domain repairs it and the gauge
// returns to 0.
func TestRepairNothingToEvictIsReported(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 3, 1)
	b := e.domain("b", 4, 1)
	e.placedAt("batch", "", b[0], 1, nil)
	e.startScheduler(repairProfile)
	hi := e.prioGang("hi", 3, 100, false)
	placed := e.bound(20*time.Second, hi...)
	if d := e.oneDomain(placed, domainKey); d != "a" {
		t.Fatalf("hi bound in %s, want a", d)
	}
	e.failNode(nodeOf(placed, hi[2]))
	e.prioPod(devenv.PodSpec{Name: "hi-r2", Group: "hi", GPUs: 1}, 100, false)
	reason := "gang " + e.ns + "/hi is bound in domain a, which has room for 0 of 1 missing members"
	m := e.message("hi-r2", reason, 20*time.Second)
	if !strings.HasSuffix(m, "; preemption: evicting lower-priority pods would not free one domain for 1 members") {
		t.Fatalf("message %q lacks the preemption reason", m)
	}
	e.waitMetric("ome_scheduler_degraded_gangs", map[string]string{"topology_key": domainKey}, 1, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for len(e.gangDegradedEvents("hi")) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	e.staysPending(3*time.Second, "hi-r2")
	evs := e.gangDegradedEvents("hi")
	if len(evs) != 1 || !strings.HasPrefix(evs[0], reason) {
		t.Fatalf("GangDegraded events %q, want one starting %q", evs, reason)
	}
	e.untouched("batch", hi[0], hi[1])
	// Capacity comes back in the domain: the replacement binds there, the gang is whole.
	e.node(devenv.NodeSpec{Name: "a-new", GPUs: 1, Labels: map[string]string{domainKey: "a"}})
	got := e.bound(20*time.Second, hi[0], hi[1], "hi-r2")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacement in %s, want a", d)
	}
	e.waitMetric("ome_scheduler_degraded_gangs", map[string]string{"topology_key": domainKey}, 0, 10*time.Second)
}
