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

// Partner placement groups on a real API server (chart defaults: placementGroupLabel
// ome.io/placement-group).

const (
	groupLabel = "ome.io/placement-group"
	zoneKey    = "topology.ome.io/zone"
)

// partner creates a partner PodGroup of group grp (size annotation size; group topology key
// groupKey when not "") with minMember n, and its n one-GPU members <name>-<i>.
func (e *env) partner(name string, n int32, grp, size, groupKey string) []string {
	e.t.Helper()
	e.partnerGroup(name, n, grp, size, groupKey)
	return e.gang(name, int(n), 1, false)
}

// partnerGroup creates only the partner PodGroup of partner (no members).
func (e *env) partnerGroup(name string, n int32, grp, size, groupKey string) {
	e.t.Helper()
	pg := devenv.NewPodGroup(e.ns, name, n, domainKey, 60)
	pg.Labels = map[string]string{groupLabel: grp}
	pg.Annotations[groupLabel+"-size"] = size
	if groupKey != "" {
		pg.Annotations[groupLabel+"-topology-key"] = groupKey
	}
	if _, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PodGroup %s: %v", name, err)
	}
}

// domainsOf maps each pod to its node's value of key.
func (e *env) domainsOf(placed map[string]string, key string) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for pod, node := range placed {
		out[pod] = e.labelOf(node, key)
	}
	return out
}

var placedResult = map[string]string{"result": "placed"}

// G1: two partners of 2 members, cliques of 4, 2 and 3 free nodes: all four in the 4-node
// clique (alone, each would best-fit the 2-node clique).
func TestPartnerGroupFillsOneClique(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.domain("c2", 2, 1)
	e.domain("c3", 3, 1)
	e.startScheduler(devenv.Profile{})
	before := metric(t, "ome_scheduler_placement_group_total", placedResult)
	pods := append(e.partner("a", 2, "grp", "2", ""), e.partner("b", 2, "grp", "2", "")...)
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c4" {
		t.Fatalf("group in %s, want c4", d)
	}
	for pod, node := range got { // no group topology key: the group key is the gang's own
		e.wantPlacement(pod, node, domainKey, domainKey)
	}
	if m := metric(t, "ome_scheduler_placement_group_total", placedResult); m != before+1 {
		t.Errorf("placement_group_total{placed} = %v, want %v", m, before+1)
	}
}

// G2: one partner missing: the other waits with the reason naming the group; once the partner
// exists both bind together.
func TestPartnerGroupWaitsForMissingPartner(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.startScheduler(devenv.Profile{})
	a := e.partner("a", 2, "grp", "2", "")
	// a-1 plans with its gang complete: a is ready, b missing
	e.message("a-1", fmt.Sprintf("waiting for placement group %s/grp: 1 of 2 PodGroups ready", e.ns), 20*time.Second)
	e.message("a-0", fmt.Sprintf("waiting for placement group %s/grp: ", e.ns), 20*time.Second)
	e.staysPending(2*time.Second, a...)
	b := e.partner("b", 2, "grp", "2", "")
	e.bound(30*time.Second, append(a, b...)...)
}

// G3: no clique holds both partners (3-node cliques, 2 + 2 members): nothing binds, though
// each alone would fit.
func TestPartnerGroupNoCliqueHoldsBoth(t *testing.T) {
	e := newEnv(t)
	e.domain("c1", 3, 1)
	e.domain("c2", 3, 1)
	e.startScheduler(devenv.Profile{})
	pods := append(e.partner("a", 2, "grp", "2", ""), e.partner("b", 2, "grp", "2", "")...)
	e.message("a-0", fmt.Sprintf("no domain has room for placement group %s/grp: the best domain c1 has room for 3 of 4 members", e.ns), 20*time.Second)
	e.staysPending(3*time.Second, pods...)
}

// G4: group key zone, gang key clique: each partner whole in one clique, both in the one zone
// that has two cliques with room.
func TestPartnerGroupZoneOfCliques(t *testing.T) {
	e := newEnv(t)
	e.domain("c1", 2, 1, map[string]string{zoneKey: "z1"})
	e.domain("c2", 2, 1, map[string]string{zoneKey: "z2"})
	e.domain("c3", 2, 1, map[string]string{zoneKey: "z2"})
	e.startScheduler(devenv.Profile{})
	a := e.partner("a", 2, "grp", "2", zoneKey)
	b := e.partner("b", 2, "grp", "2", zoneKey)
	got := e.bound(30*time.Second, append(a, b...)...)
	e.oneDomain(map[string]string{"a-0": got["a-0"], "a-1": got["a-1"]}, domainKey)
	e.oneDomain(map[string]string{"b-0": got["b-0"], "b-1": got["b-1"]}, domainKey)
	if z := e.oneDomain(got, zoneKey); z != "z2" {
		t.Fatalf("group in zone %s, want z2", z)
	}
	for pod, node := range got {
		e.wantPlacement(pod, node, domainKey, zoneKey)
	}
	if e.labelOf(got["a-0"], domainKey) == e.labelOf(got["b-0"], domainKey) {
		t.Fatalf("both partners in one clique of 2 nodes: %v", got)
	}
}

// G5 (restart): a bound partner pins the group's domain: after a restart, the other partner's
// replacements are placed in it, although alone they would best-fit another clique, and bind
// (the bound partner has its minMember members).
func TestPartnerGroupRestartRejoinsDomain(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.domain("c2", 2, 1)
	e.startScheduler(devenv.Profile{})
	a := e.partner("a", 2, "grp", "2", "")
	b := e.partner("b", 2, "grp", "2", "")
	got := e.bound(30*time.Second, append(a, b...)...)
	if d := e.oneDomain(got, domainKey); d != "c4" {
		t.Fatalf("group in %s, want c4", d)
	}
	e.stopScheduler()
	for _, p := range a {
		e.deletePodNow(p)
	}
	e.gone(20*time.Second, a...)
	e.startScheduler(devenv.Profile{})
	e.gang("a", 2, 1, false)
	got = e.bound(30*time.Second, a...)
	if d := e.oneDomain(got, domainKey); d != "c4" {
		t.Fatalf("replacements in %s, want c4 (the bound partner's clique)", d)
	}
}

// G6: partners disagreeing on the size: a clear reason, nothing binds.
func TestPartnerGroupSizesDisagree(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.startScheduler(devenv.Profile{})
	pods := append(e.partner("a", 2, "grp", "2", ""), e.partner("b", 2, "grp", "3", "")...)
	want := fmt.Sprintf("placement group %s/grp: PodGroups disagree on ome.io/placement-group-size", e.ns)
	e.message("a-0", want, 20*time.Second)
	e.message("b-0", want, 20*time.Second)
	e.staysPending(2*time.Second, pods...)
}

// Three partners of different sizes (1, 2 and 3 members): the clique of 6 that holds them all
// exactly, not the larger one, and no partner alone.
func TestPartnerGroupThreePartnersOfDifferentSizes(t *testing.T) {
	e := newEnv(t)
	e.domain("c3", 3, 1)
	e.domain("c6", 6, 1)
	e.domain("c8", 8, 1)
	e.startScheduler(devenv.Profile{})
	var pods []string
	for i, n := range []int32{1, 2, 3} {
		pods = append(pods, e.partner(fmt.Sprintf("p%d", i), n, "trio", "3", "")...)
	}
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c6" {
		t.Fatalf("group in %s, want c6", d)
	}
}

// A partner's PodGroup deleted mid-formation unwinds the whole group: the other partner's
// waiting members are rejected (nothing binds) and wait for the group again.
func TestPartnerGroupDeletedPartnerUnwindsGroup(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.startScheduler(devenv.Profile{Args: strings.Replace(devenv.DefaultArgs, "gcIntervalSeconds: 60", "gcIntervalSeconds: 1", 1)})
	unwound := map[string]string{"result": "unwound"}
	before := metric(t, "ome_scheduler_placement_group_total", unwound)
	a := e.partner("a", 2, "grp", "2", "")
	pg := devenv.NewPodGroup(e.ns, "b", 2, domainKey, 60)
	pg.Labels = map[string]string{groupLabel: "grp"}
	pg.Annotations[groupLabel+"-size"] = "2"
	if _, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waits := map[string]string{"result": "wait"}
	base := metric(t, "ome_scheduler_gang_gate_total", waits)
	e.pod(devenv.PodSpec{Name: "b-1", Group: "b", GPUs: 1, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: "b-0", Group: "b", GPUs: 1})
	// a-0, a-1 (a complete, b not) and b-0 wait at Permit
	deadline := time.Now().Add(20 * time.Second)
	for metric(t, "ome_scheduler_gang_gate_total", waits) < base+3 {
		if time.Now().After(deadline) {
			t.Fatalf("members never all waited at Permit: %v", devenv.FailedSchedulingMessages(e.ctx, e.cp.Client, e.ns, "a-0"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.staysPending(time.Second, append(a, "b-0")...)
	if err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Delete(e.ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.message("a-0", fmt.Sprintf("gang %s/a unwound after a member failed to schedule", e.ns), 20*time.Second)
	if m := metric(t, "ome_scheduler_placement_group_total", unwound); m != before+1 {
		t.Errorf("placement_group_total{unwound} = %v, want %v", m, before+1)
	}
	e.staysPending(2*time.Second, append(a, "b-0")...)
}

// Hard zone spread on a partner's leader: two placement groups (prefill + decode partners of
// 2 members each), the prefill leader of each carrying a DoNotSchedule spread across zones.
// Zone z1 has two cliques of 4, z2 one: the first group takes a1 (best fit, ties by name);
// the second group, which alone would take a2, must go to z2 (b1), whole, in one clique.
// The second group reaches b1 only after the spread filter vetoed its pin in a2 (logged).
func TestPartnerGroupLeaderZoneSpread(t *testing.T) {
	e := newEnv(t)
	e.domain("a1", 4, 1, map[string]string{zoneKey: "z1"})
	e.domain("a2", 4, 1, map[string]string{zoneKey: "z1"})
	e.domain("b1", 4, 1, map[string]string{zoneKey: "z2"})
	e.startScheduler(devenv.Profile{})
	spread := spreadOn(zoneKey, "svc", v1.DoNotSchedule)
	group := func(grp string) []string {
		e.partnerGroup(grp+"-prefill", 2, grp, "2", "")
		e.partnerGroup(grp+"-decode", 2, grp, "2", "")
		leader := grp + "-prefill-0"
		e.pod(devenv.PodSpec{Name: leader, Group: grp + "-prefill", GPUs: 1, Spread: spread,
			Labels: map[string]string{"app": "svc", "role": "leader"}})
		pods := []string{leader}
		for _, m := range [][2]string{{"prefill", "1"}, {"decode", "0"}, {"decode", "1"}} {
			name := grp + "-" + m[0] + "-" + m[1]
			e.pod(devenv.PodSpec{Name: name, Group: grp + "-" + m[0], GPUs: 1,
				Labels: map[string]string{"app": "svc", "role": "worker"}})
			pods = append(pods, name)
		}
		return pods
	}
	zoneOf := map[string]string{}
	for _, grp := range []string{"g1", "g2"} {
		pods := group(grp)
		got := e.bound(30*time.Second, pods...)
		c := e.oneDomain(got, domainKey)
		e.distinctNodes(got)
		zoneOf[grp] = e.oneDomain(got, zoneKey)
		t.Logf("%s in clique %s, zone %s", grp, c, zoneOf[grp])
		// Unlike a single gang's leader (deferred pin, design section 11), a partner's leader
		// is planned with its group at PreFilter: the group is first pinned in a2, the spread
		// filter vetoes it (gang reservation released ..., the partners unwound), then b1.
		vetoes := 0
		for _, m := range devenv.FailedSchedulingMessages(e.ctx, e.cp.Client, e.ns, pods[0]) {
			if strings.Contains(m, "gang reservation released after all candidate nodes were filtered") {
				vetoes++
			}
		}
		t.Logf("%s: %d spread vetoes of a pinned group domain", pods[0], vetoes)
	}
	if zoneOf["g1"] == zoneOf["g2"] {
		t.Fatalf("both groups in zone %s", zoneOf["g1"])
	}
}

// Restart mid-formation: partner b's second member is gated, so the group cannot complete
// while a-0, a-1 and b-0 wait at Permit. A new scheduler process, then the ungate: every
// member of both partners binds, all in the clique of 4 (alone each partner would best-fit
// the clique of 2), none split.
func TestPartnerGroupRestartMidFormation(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.domain("c2", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.partnerGroup("a", 2, "grp", "2", "")
	e.partnerGroup("b", 2, "grp", "2", "")
	gw := newGateWatch(t)
	e.pod(devenv.PodSpec{Name: "b-1", Group: "b", GPUs: 1, Gates: []string{"example.com/later"}})
	pods := append(e.gang("a", 2, 1, false), "b-0", "b-1")
	e.pod(devenv.PodSpec{Name: "b-0", Group: "b", GPUs: 1})
	// a-0, a-1 and b-0 wait at Permit: the group is forming and holds c4
	deadline := time.Now().Add(20 * time.Second)
	for metric(t, "ome_scheduler_gang_gate_total", map[string]string{"result": "wait"}) < gw.base+3 {
		if time.Now().After(deadline) {
			t.Fatalf("members never all waited at Permit: %v", devenv.FailedSchedulingMessages(e.ctx, e.cp.Client, e.ns, "a-0"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.staysPending(time.Second, pods...)
	e.stopScheduler()
	e.startScheduler(devenv.Profile{})
	e.ungate("b-1")
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c4" {
		t.Fatalf("group in %s, want c4", d)
	}
	e.distinctNodes(got)
}

// Rule 7: a placement group that fits nowhere preempts as one unit. Clique c1 (4 nodes) is
// full of a low-priority gang, clique c2 has 2 nodes: the group of two 2-member partners
// evicts the low gang whole and binds, every partner, in c1.
func TestPartnerGroupPreemptsOneGroupDomain(t *testing.T) {
	e := newEnv(t)
	e.domain("c1", 4, 1)
	e.domain("c2", 2, 1)
	e.startScheduler(preemptionProfile)
	low := e.prioGang("low", 4, 1, false)
	e.bound(30*time.Second, low...)
	e.partnerGroup("a", 2, "grp", "2", "")
	e.partnerGroup("b", 2, "grp", "2", "")
	var group []string
	for _, p := range []string{"a", "b"} {
		for i := 0; i < 2; i++ {
			n := fmt.Sprintf("%s-%d", p, i)
			e.prioPod(devenv.PodSpec{Name: n, Group: p, GPUs: 1}, 10, false)
			group = append(group, n)
		}
	}
	got := e.bound(40*time.Second, group...)
	if d := e.oneDomain(got, domainKey); d != "c1" {
		t.Fatalf("group in %s, want c1", d)
	}
	e.distinctNodes(got)
	e.gone(20*time.Second, low...)
}
