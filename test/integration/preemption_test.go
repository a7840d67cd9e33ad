package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Gang-aware, topology-aware preemption on a real API server, with the plugin argument
// preemption: true (the chart's disablePreemption=false). The API server runs without the
// Priority admission plugin, so the pods carry spec.priority directly.

// preemptionProfile is the chart's configuration with preemption on.
var preemptionProfile = devenv.Profile{Args: devenv.DefaultArgs + "\npreemption: true"}

// prioPod creates a pod with spec.priority (and, when never, preemptionPolicy Never).
func (e *env) prioPod(s devenv.PodSpec, priority int32, never bool) {
	e.t.Helper()
	s.Namespace = e.ns
	p := devenv.NewPod(s)
	p.Spec.Priority = ptr.To(priority)
	if never {
		p.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	}
	if _, err := e.cp.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod %s: %v", s.Name, err)
	}
}

// prioGang creates the PodGroup and n one-GPU members <group>-<i> at priority.
func (e *env) prioGang(group string, n int, priority int32, never bool) []string {
	e.t.Helper()
	e.podGroup(group, int32(n), domainKey, 60)
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		e.prioPod(devenv.PodSpec{Name: name, Group: group, GPUs: 1}, priority, never)
		names = append(names, name)
	}
	return names
}

// placedAt creates a one-GPU pod at priority (a gang member when group is set) and binds it
// to node directly, as another scheduler would.
func (e *env) placedAt(name, group, node string, priority int32, labels map[string]string) {
	e.t.Helper()
	e.prioPod(devenv.PodSpec{Name: name, Group: group, GPUs: 1, Labels: labels, SchedulerName: "other-scheduler"}, priority, false)
	if err := devenv.BindPod(e.ctx, e.cp.Client, e.ns, name, node); err != nil {
		e.t.Fatalf("bind %s to %s: %v", name, node, err)
	}
}

// exists reports whether the pod exists (Terminating included).
func (e *env) exists(name string) bool {
	_, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	return !apierrors.IsNotFound(err)
}

// untouched asserts every pod still exists and is not being deleted.
func (e *env) untouched(pods ...string) {
	e.t.Helper()
	for _, n := range pods {
		p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, n, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			e.t.Fatalf("pod %s was evicted (err %v)", n, err)
		}
	}
}

// preemptedEvents returns victim pod → the note of its Preempted event.
func (e *env) preemptedEvents() map[string]string {
	out := map[string]string{}
	evs, err := e.cp.Client.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	for _, ev := range evs.Items {
		if ev.Reason == "Preempted" {
			out[ev.Regarding.Name] = ev.Note
		}
	}
	return out
}

// waitPreemptedEvents waits for Preempted events on n pods.
func (e *env) waitPreemptedEvents(n int, timeout time.Duration) map[string]string {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := e.preemptedEvents()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func preemptions(t *testing.T, preemptor, result string) float64 {
	v, _ := lookupMetric(t, "ome_scheduler_preemption_total", map[string]string{"preemptor": preemptor, "result": result})
	return v
}

func victimUnits(t *testing.T, unit string) float64 {
	v, _ := lookupMetric(t, "ome_scheduler_preemption_victims_total", map[string]string{"unit": unit})
	return v
}

// endsWith waits for a FailedScheduling message of the pod ending with suffix.
func (e *env) endsWith(pod, suffix string) string {
	e.t.Helper()
	msg := e.message(pod, suffix, 20*time.Second)
	if !strings.HasSuffix(msg, suffix) {
		e.t.Fatalf("message %q does not end with %q", msg, suffix)
	}
	return msg
}

// E1, E8 and graceful victims: two cliques full of low-priority gangs; a high-priority gang
// of the clique's size evicts exactly one whole gang (the lower of the two), waits while its
// victims terminate without preempting again, and binds in that clique; the other gang is
// untouched. The victims' events name the preemptor and the metrics count one preemption of
// one victim gang.
func TestPreemptGangEvictsOneWholeGang(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	b := e.domain("b", 2, 1)
	e.placedAt("low-0", "low", b[0], 1, nil)
	e.placedAt("low-1", "low", b[1], 1, nil)
	e.placedAt("mid-0", "mid", a[0], 5, nil)
	e.placedAt("mid-1", "mid", a[1], 5, nil)
	e.podGroup("low", 2, domainKey, 60)
	e.podGroup("mid", 2, domainKey, 60)
	e.startScheduler(preemptionProfile)
	before, beforeGangs := preemptions(t, "gang", "preempted"), victimUnits(t, "gang")

	hi := e.prioGang("hi", 2, 100, false)
	msg := e.message(hi[0], "; preemption: waiting for", 20*time.Second)
	t.Logf("while the victims terminate: %s", msg)
	if p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, "low-0", metav1.GetOptions{}); err == nil {
		if p.DeletionTimestamp == nil || !hasDisruptionTarget(p) {
			t.Fatalf("victim low-0 not Terminating with DisruptionTarget: %+v", p.Status.Conditions)
		}
	}
	e.untouched("mid-0", "mid-1")
	got := e.bound(30*time.Second, hi...)
	if d := e.oneDomain(got, domainKey); d != "b" {
		t.Fatalf("hi bound in %s, want b (the low gang's clique)", d)
	}
	e.gone(10*time.Second, "low-0", "low-1")
	e.untouched("mid-0", "mid-1")
	want := "Preempted by gang " + e.ns + "/hi to place it in domain b"
	evs := e.preemptedEvents()
	if len(evs) != 2 || evs["low-0"] != want || evs["low-1"] != want {
		t.Fatalf("Preempted events %v, want %q on low-0 and low-1 only", evs, want)
	}
	if d := preemptions(t, "gang", "preempted") - before; d != 1 {
		t.Fatalf("preemption_total{gang,preempted} grew by %v, want 1 (no second preemption while victims terminated)", d)
	}
	if d := victimUnits(t, "gang") - beforeGangs; d != 1 {
		t.Fatalf("preemption_victims_total{gang} grew by %v, want 1", d)
	}
}

// E2: a clique with a free node and one low-priority standalone pod beats a clique holding a
// two-member low-priority gang: one victim, not two.
func TestPreemptFewestVictims(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	b := e.domain("b", 2, 1)
	e.placedAt("solo", "", a[1], 1, nil)
	e.placedAt("low-0", "low", b[0], 1, nil)
	e.placedAt("low-1", "low", b[1], 1, nil)
	e.podGroup("low", 2, domainKey, 60)
	e.startScheduler(preemptionProfile)
	beforePods := victimUnits(t, "pod")
	hi := e.prioGang("hi", 2, 100, false)
	got := e.bound(30*time.Second, hi...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("hi bound in %s, want a", d)
	}
	e.gone(10*time.Second, "solo")
	e.untouched("low-0", "low-1")
	if d := victimUnits(t, "pod") - beforePods; d != 1 {
		t.Fatalf("victims{pod} grew by %v, want 1", d)
	}
}

// E3 and E4: pods of equal or higher priority are never victims, and preemptionPolicy Never
// evicts nothing; each waits with the reason at the end of its FailedScheduling message.
func TestPreemptNoVictim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prio  int32
		never bool
		want  string
	}{
		{"equal", 100, false, "; preemption: no lower-priority pods to evict"},
		{"higher", 200, false, "; preemption: no lower-priority pods to evict"},
		{"never", 1, true, "; preemption: preemptionPolicy is Never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a := e.domain("a", 2, 1)
			e.placedAt("low-0", "low", a[0], tc.prio, nil)
			e.placedAt("low-1", "low", a[1], tc.prio, nil)
			e.podGroup("low", 2, domainKey, 60)
			e.startScheduler(preemptionProfile)
			hi := e.prioGang("hi", 2, 100, tc.never)
			msg := e.endsWith(hi[0], tc.want)
			t.Logf("FailedScheduling: %s", msg)
			if !strings.Contains(msg, "no domain has room for gang "+e.ns+"/hi") {
				t.Fatalf("message %q", msg)
			}
			e.staysPending(2*time.Second, hi...)
			e.untouched("low-0", "low-1")
			if evs := e.preemptedEvents(); len(evs) != 0 {
				t.Fatalf("Preempted events %v", evs)
			}
		})
	}
}

// E5: a high-priority standalone pod in a full cluster of gangs evicts a whole gang, never
// one member.
func TestPreemptStandaloneEvictsWholeGang(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.placedAt("low-0", "low", a[0], 1, nil)
	e.placedAt("low-1", "low", a[1], 1, nil)
	e.podGroup("low", 2, domainKey, 60)
	e.startScheduler(preemptionProfile)
	before := preemptions(t, "pod", "preempted")
	e.prioPod(devenv.PodSpec{Name: "solo", GPUs: 1}, 100, false)
	e.bound(30*time.Second, "solo")
	e.gone(10*time.Second, "low-0", "low-1")
	// Both nodes are free once the gang is gone, so the pod may bind to either; the events
	// name the node it was nominated to, the same on both members.
	evs := e.preemptedEvents()
	want0 := "Preempted by pod " + e.ns + "/solo to place it in domain " + a[0]
	want1 := "Preempted by pod " + e.ns + "/solo to place it in domain " + a[1]
	if len(evs) != 2 || evs["low-0"] != evs["low-1"] || (evs["low-0"] != want0 && evs["low-0"] != want1) {
		t.Fatalf("Preempted events %v, want %q (or %q) on both members", evs, want0, want1)
	}
	if d := preemptions(t, "pod", "preempted") - before; d != 1 {
		t.Fatalf("preemption_total{pod,preempted} grew by %v, want 1", d)
	}
}

// E6: a PDB-protected gang is kept when an unprotected one can be evicted instead, even
// though the protected one's clique would win every other tie.
func TestPreemptPDBProtectedGangKept(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	b := e.domain("b", 2, 1)
	prot := map[string]string{"app": "prot"}
	e.placedAt("prot-0", "prot", a[0], 1, prot)
	e.placedAt("prot-1", "prot", a[1], 1, prot)
	e.placedAt("free-0", "free", b[0], 1, nil)
	e.placedAt("free-1", "free", b[1], 1, nil)
	e.podGroup("prot", 2, domainKey, 60)
	e.podGroup("free", 2, domainKey, 60)
	two := intstr.FromInt32(2)
	// No disruption controller runs here: the budget's status stays at 0 allowed disruptions.
	if _, err := e.cp.Client.PolicyV1().PodDisruptionBudgets(e.ns).Create(e.ctx, &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "prot"},
		Spec:       policy.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: labelSelector("app", "prot")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startScheduler(preemptionProfile)
	hi := e.prioGang("hi", 2, 100, false)
	got := e.bound(30*time.Second, hi...)
	if d := e.oneDomain(got, domainKey); d != "b" {
		t.Fatalf("hi bound in %s, want b", d)
	}
	e.untouched("prot-0", "prot-1")
}

// E7: room that exists only across two cliques is never bought with evictions.
func TestPreemptNeverAcrossCliques(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	b := e.domain("b", 2, 1)
	e.placedAt("s-a", "", a[1], 1, nil)
	e.placedAt("s-b", "", b[1], 1, nil)
	e.startScheduler(preemptionProfile)
	hi := e.prioGang("hi", 3, 100, false)
	e.endsWith(hi[0], "; preemption: evicting lower-priority pods would not free one domain for 3 members")
	e.staysPending(2*time.Second, hi...)
	e.untouched("s-a", "s-b")
}

// The scheduler-plugins coscheduling "different priority" case: on one node that fits one
// gang, a high-priority gang displaces a mid-priority gang, whether the mid gang was placed
// first (sequential) or both arrive together (interleaved).
func TestPreemptCoschedulingDifferentPriority(t *testing.T) {
	for _, interleaved := range []bool{false, true} {
		t.Run(fmt.Sprintf("interleaved=%v", interleaved), func(t *testing.T) {
			e := newEnv(t)
			e.domain("a", 1, 3)
			e.startScheduler(preemptionProfile)
			var mid, hi []string
			if interleaved {
				e.podGroup("mid", 3, domainKey, 60)
				e.podGroup("hi", 3, domainKey, 60)
				for i := 0; i < 3; i++ {
					for _, g := range []struct {
						name string
						prio int32
						list *[]string
					}{{"mid", 50, &mid}, {"hi", 100, &hi}} {
						n := fmt.Sprintf("%s-%d", g.name, i)
						e.prioPod(devenv.PodSpec{Name: n, Group: g.name, GPUs: 1}, g.prio, false)
						*g.list = append(*g.list, n)
					}
				}
			} else {
				mid = e.prioGang("mid", 3, 50, false)
				e.bound(30*time.Second, mid...)
				hi = e.prioGang("hi", 3, 100, false)
			}
			e.bound(40*time.Second, hi...)
			for _, p := range mid {
				if n := devenv.NodeOf(e.ctx, e.cp.Client, e.ns, p); n != "" && e.exists(p) {
					pod, _ := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, p, metav1.GetOptions{})
					if pod != nil && pod.DeletionTimestamp == nil {
						t.Fatalf("mid member %s still bound to %s next to the high-priority gang", p, n)
					}
				}
			}
		})
	}
}

func hasDisruptionTarget(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// A lower-priority gang still forming (members waiting at Permit, one sibling gated) is a
// victim too: its waiters are rejected rather than deleted, its reservation is released, and
// the preemptor binds at once instead of waiting on pods that hold nothing any more.
func TestPreemptFormingGangWaitingAtPermit(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 1, 3)
	e.startScheduler(preemptionProfile)
	e.podGroup("mid", 3, domainKey, 60)
	gw := newGateWatch(t)
	e.prioPod(devenv.PodSpec{Name: "mid-2", Group: "mid", GPUs: 1, Gates: []string{"example.com/later"}}, 50, false)
	e.prioPod(devenv.PodSpec{Name: "mid-0", Group: "mid", GPUs: 1}, 50, false)
	e.prioPod(devenv.PodSpec{Name: "mid-1", Group: "mid", GPUs: 1}, 50, false)
	gw.wait()
	hi := e.prioGang("hi", 3, 100, false)
	e.bound(20*time.Second, hi...)
	for _, p := range []string{"mid-0", "mid-1"} {
		if n := devenv.NodeOf(e.ctx, e.cp.Client, e.ns, p); n != "" {
			t.Fatalf("%s bound to %s next to the high-priority gang", p, n)
		}
	}
}
