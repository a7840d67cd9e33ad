package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// A burst of 32 gangs converges: every gang in one domain, no node double-booked, every
// accelerator used exactly once.
func TestBurstOf32Gangs(t *testing.T) {
	e := newEnv(t)
	for d := 0; d < 16; d++ {
		e.domain(fmt.Sprintf("d%02d", d), 4, 1)
	}
	e.startScheduler(devenv.Profile{})
	var all []string
	gangs := map[string][]string{}
	for g := 0; g < 32; g++ {
		name := fmt.Sprintf("g%02d", g)
		e.podGroup(name, 2, domainKey, 120)
	}
	// Members first for half of the gangs, interleaved, to mix arrival orders.
	for i := 0; i < 2; i++ {
		for g := 0; g < 32; g++ {
			name := fmt.Sprintf("g%02d", g)
			pod := fmt.Sprintf("%s-%d", name, i)
			e.pod(devenv.PodSpec{Name: pod, Group: name, GPUs: 1, Apart: true})
			gangs[name] = append(gangs[name], pod)
			all = append(all, pod)
		}
	}
	got := e.bound(120*time.Second, all...)
	e.distinctNodes(got)
	for name, pods := range gangs {
		sub := map[string]string{}
		for _, p := range pods {
			sub[p] = got[p]
		}
		if d := e.oneDomain(sub, domainKey); d == "" {
			t.Fatalf("gang %s has no domain", name)
		}
	}
}

// A permit timeout unwinds the gang (the waiter is rejected with kube-scheduler's timeout
// text and the hold lifts); a later retry succeeds.
func TestPermitTimeoutUnwindsThenRetrySucceeds(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	unwinds := metric(t, "ome_scheduler_gang_unwind_total", nil)
	e.podGroup("g", 2, domainKey, 6)
	e.pod(devenv.PodSpec{Name: "g-1", Group: "g", GPUs: 1, Apart: true, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1, Apart: true})
	// Two timers end the wait at the gang's timeout, whichever fires first: kube-scheduler's
	// Permit timeout, or the reservation's own expiry (which rejects the waiter as an unwind).
	// Either way the attempt expired, so the domain rests for another timeout.
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs := devenv.FailedSchedulingMessages(e.ctx, e.cp.Client, e.ns, "g-0")
		if slices.ContainsFunc(msgs, func(m string) bool {
			return strings.Contains(m, "rejected due to timeout after waiting 6s at plugin OMEGangPack") ||
				strings.Contains(m, "gang "+e.ns+"/g unwound after a member failed to schedule")
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("g-0 was not rejected at the gang's timeout; messages %q", msgs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if d := metric(t, "ome_scheduler_gang_unwind_total", nil) - unwinds; d < 1 {
		t.Fatalf("unwind_total grew by %v, want >= 1", d)
	}
	e.message("g-0", "domain a rests after the gang's reservation there expired", 6*time.Second)
	// The hold lifted: a standalone pod may use the domain.
	e.pod(devenv.PodSpec{Name: "solo", CPU: "1"})
	e.bound(20*time.Second, "solo")
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	e.distinctNodes(got)
}

// PodGroup deleted and re-created while the gang forms: the old attempt is released (its
// waiter rejected with "released commitment owned by a previous PodGroup instance") and the
// gang forms under the new PodGroup.
func TestPodGroupRecreatedMidFormation(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 120)
	e.waitWithGatedSibling("g", "g-0", "g-1", true)
	if err := cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Delete(e.ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.podGroup("g", 2, domainKey, 120)
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	e.oneDomain(got, domainKey)
	msgs := strings.Join(devenv.FailedSchedulingMessages(e.ctx, cp.Client, e.ns, "g-0"), "\n")
	if !strings.Contains(msgs, "gang "+e.ns+"/g unwound after a member failed to schedule") &&
		!strings.Contains(strings.Join(devenv.FailedSchedulingMessages(e.ctx, cp.Client, e.ns, "g-1"), "\n"), "released commitment owned by a previous PodGroup instance "+e.ns+"/g") {
		t.Fatalf("no sign of the owner-change release in the events: %q", msgs)
	}
}

// The PodGroup's topology key changes while the gang forms: the gang re-plans under the new
// key and lands in one domain of it.
func TestTopologyKeyChangedMidFormation(t *testing.T) {
	e := newEnv(t)
	const rackKey = "topology.ome.io/rack"
	// Domains under domainKey: a (2 nodes). Under rackKey: r1 = a-0 + x-0, r2 = x-1 + x-2.
	a := e.domain("a", 2, 1)
	x := []string{
		e.node(devenv.NodeSpec{Name: "x-0", GPUs: 1, Labels: map[string]string{rackKey: "r1"}}),
		e.node(devenv.NodeSpec{Name: "x-1", GPUs: 1, Labels: map[string]string{rackKey: "r2"}}),
		e.node(devenv.NodeSpec{Name: "x-2", GPUs: 1, Labels: map[string]string{rackKey: "r2"}}),
	}
	_ = x
	e.updateNodeLabel(a[0], rackKey, "r1")
	e.startScheduler(devenv.Profile{})
	replans := metric(t, "ome_scheduler_gang_pin_total", map[string]string{"result": "topology_replan"})
	e.podGroup("g", 2, domainKey, 120)
	e.waitWithGatedSibling("g", "g-0", "g-1", true)
	e.updatePodGroup("g", func(pg *schedv1alpha1.PodGroup) { pg.Annotations[devenv.TopologyAnno] = rackKey })
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	e.oneDomain(got, rackKey)
	if d := metric(t, "ome_scheduler_gang_pin_total", map[string]string{"result": "topology_replan"}) - replans; d < 1 {
		t.Fatalf("pin_total{topology_replan} grew by %v, want >= 1", d)
	}
}

// Node topology labels change while the gang forms: the pinned domain vanishes, the waiting
// member's attempt is unwound (never left behind while a new attempt admits the rest), and
// the gang forms whole in one domain of the new labels.
func TestNodeTopologyLabelsChangedMidFormation(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.domain("b", 3, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 120)
	e.waitWithGatedSibling("g", "g-0", "g-1", true)
	for _, n := range a {
		e.updateNodeLabel(n, domainKey, "c")
	}
	time.Sleep(500 * time.Millisecond)
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	e.oneDomain(got, domainKey)
	e.distinctNodes(got)
}
