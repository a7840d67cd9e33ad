package integration

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

var pinned = map[string]string{"result": "pinned"}

// Best fit between two domains — the smaller domain that fits the whole gang wins.
func TestBestFitBetweenTwoDomains(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.domain("b", 3, 1)
	e.startScheduler(devenv.Profile{})
	before := metric(t, "ome_scheduler_gang_pin_total", pinned)
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in domain %s, want a (room 2 < 3)", d)
	}
	e.distinctNodes(got)
	for _, n := range got {
		if n != a[0] && n != a[1] {
			t.Fatalf("member on %s, not a node of a %v", n, a)
		}
	}
	if d := metric(t, "ome_scheduler_gang_pin_total", pinned) - before; d != 1 {
		t.Fatalf("pin_total{pinned} grew by %v, want 1", d)
	}
}

// The gate holds a lone member until minMember members exist.
func TestGateHoldsLoneMember(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1})
	msg := e.message("g-0", "waiting for all PodGroup member templates for "+e.ns+"/g", 20*time.Second)
	if !strings.Contains(msg, ": 1 of 2 members exist") {
		t.Fatalf("M11 detail missing: %q", msg)
	}
	e.staysPending(4*time.Second, "g-0")
	e.pod(devenv.PodSpec{Name: "g-1", Group: "g", GPUs: 1})
	got := e.bound(30*time.Second, "g-0", "g-1")
	e.oneDomain(got, domainKey)
}

// minMember 4 with 2 members: neither binds.
func TestIncompleteGangNeverBinds(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 4, domainKey, 60)
	pods := e.gang("g", 2, 1, false)
	// g-0 may be tried before g-1 exists ("1 of 4"); a member added to a gang that cannot be
	// complete yet wakes nobody, so the count it shows may stay at 1.
	m := e.message(pods[0], "waiting for all PodGroup member templates for "+e.ns+"/g: ", 40*time.Second)
	if !strings.HasSuffix(m, " of 4 members exist") && !strings.Contains(m, " of 4 members exist.") {
		t.Fatalf("message %q does not count the gang's members against minMember 4", m)
	}
	e.message(pods[1], "waiting for all PodGroup member templates for "+e.ns+"/g: 2 of 4 members exist", 20*time.Second)
	e.staysPending(3*time.Second, pods...)
}

// Missing topology key, then repaired by annotating the PodGroup.
func TestMissingTopologyKeyThenRepaired(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, "", 60)
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "PodGroup "+e.ns+"/g must declare ome.io/topology-key or the scheduler must configure topologyKey", 20*time.Second)
	e.staysPending(2*time.Second, pods...)
	e.updatePodGroup("g", func(pg *schedv1alpha1.PodGroup) { pg.Annotations = map[string]string{devenv.TopologyAnno: domainKey} })
	got := e.bound(30*time.Second, pods...)
	e.oneDomain(got, domainKey)
}

// Heterogeneous gang — the domain that fits every member wins over the smaller one.
func TestHeterogeneousGang(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 2, 2)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "small", Group: "g", GPUs: 1, Apart: true})
	e.pod(devenv.PodSpec{Name: "large", Group: "g", GPUs: 2, Apart: true})
	got := e.bound(30*time.Second, "small", "large")
	if d := e.oneDomain(got, domainKey); d != "b" {
		t.Fatalf("gang in %s, want b (a cannot hold the 2-unit member)", d)
	}
}

// Candidate narrowing — the flexible member never takes the only node the constrained
// sibling can use.
func TestFlexibleMemberLeavesConstrainedNode(t *testing.T) {
	e := newEnv(t)
	nodes := e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	// "a-flex" sorts first, so it is usually scheduled first.
	e.pod(devenv.PodSpec{Name: "a-flex", Group: "g", GPUs: 1})
	e.pod(devenv.PodSpec{Name: "b-pinned", Group: "g", GPUs: 1, NodeSelector: map[string]string{v1.LabelHostname: nodes[0]}})
	got := e.bound(30*time.Second, "a-flex", "b-pinned")
	if got["b-pinned"] != nodes[0] || got["a-flex"] != nodes[1] {
		t.Fatalf("placement %v, want b-pinned on %s and a-flex on %s", got, nodes[0], nodes[1])
	}
}

// Members already bound in two domains — the gang fails closed. Seen through the
// metrics: the refusal is counted as split_refused, and nothing is ever admitted split.
func TestSplitGangFailsClosed(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	b := e.domain("b", 2, 1)
	e.podGroup("g", 3, domainKey, 60)
	e.bindMember("g-0", "g", a[0], 1)
	e.bindMember("g-1", "g", b[0], 1)
	e.startScheduler(devenv.Profile{})
	refused0 := metric(t, placementTotal, splitRefused)
	single0, split0 := metric(t, placementTotal, singleDomain), metric(t, placementTotal, splitOutcome)
	e.pod(devenv.PodSpec{Name: "g-2", Group: "g", GPUs: 1})
	e.message("g-2", "gang "+e.ns+"/g already has members in multiple topology domains", 20*time.Second)
	if metric(t, placementTotal, splitRefused) <= refused0 {
		t.Fatal("placement_total{split_refused} did not grow with M10")
	}
	e.staysPending(2*time.Second, "g-2")
	if metric(t, placementTotal, splitOutcome) != split0 || metric(t, placementTotal, singleDomain) != single0 {
		t.Fatal("a refused split gang was counted as placed")
	}
}

// Two gangs at once never share a domain and never over-commit.
func TestTwoGangsCompeteWithoutOvercommit(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 3, 1)
	e.domain("b", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g1", 3, domainKey, 60)
	e.podGroup("g2", 3, domainKey, 60)
	p1 := e.gang("g1", 3, 1, true)
	p2 := e.gang("g2", 3, 1, true)
	got1 := e.bound(30*time.Second, p1...)
	got2 := e.bound(30*time.Second, p2...)
	d1, d2 := e.oneDomain(got1, domainKey), e.oneDomain(got2, domainKey)
	if d1 == d2 {
		t.Fatalf("both gangs in domain %s", d1)
	}
	all := map[string]string{}
	for k, v := range got1 {
		all[k] = v
	}
	for k, v := range got2 {
		all[k] = v
	}
	e.distinctNodes(all)
}

// A fresh scheduler adopts the domain of members bound earlier.
func TestRestartAdoptsBoundMembers(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 3, 1)
	e.domain("b", 2, 1)
	e.podGroup("g", 3, domainKey, 60)
	e.bindMember("g-0", "g", a[0], 1)
	e.bindMember("g-1", "g", a[1], 1)
	e.startScheduler(devenv.Profile{})
	adopted := map[string]string{"result": "adopted"}
	before := metric(t, "ome_scheduler_gang_pin_total", adopted)
	e.pod(devenv.PodSpec{Name: "g-2", Group: "g", GPUs: 1})
	got := e.bound(30*time.Second, "g-2")
	if got["g-2"] != a[2] {
		t.Fatalf("g-2 on %s, want %s (the free node of the adopted domain a)", got["g-2"], a[2])
	}
	if d := metric(t, "ome_scheduler_gang_pin_total", adopted) - before; d != 1 {
		t.Fatalf("pin_total{adopted} grew by %v, want 1", d)
	}
}

// No domain has room; the gang binds once capacity frees, without intervention.
func TestCapacityFreedLater(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.occupy("busy-0", a[0], 1)
	e.occupy("busy-1", a[1], 1)
	e.startScheduler(devenv.Profile{})
	noFit := map[string]string{"result": "no_fit"}
	before := metric(t, "ome_scheduler_gang_pin_total", noFit)
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	msg := e.message(pods[0], "no domain has room for gang "+e.ns+"/g", 20*time.Second)
	if !strings.Contains(msg, ": the best domain a has room for 0 of 2 members") {
		t.Fatalf("M17 detail missing: %q", msg)
	}
	if metric(t, "ome_scheduler_gang_pin_total", noFit) <= before {
		t.Fatal("pin_total{no_fit} did not grow")
	}
	e.deletePod("busy-0")
	e.deletePod("busy-1")
	got := e.bound(30*time.Second, pods...)
	e.oneDomain(got, domainKey)
}

// Small members share a node unless they must stay apart.
func TestSmallMembersShareANode(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 2)
	e.occupy("busy", a[1], 2)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, false)
	got := e.bound(30*time.Second, pods...)
	for p, n := range got {
		if n != a[0] {
			t.Fatalf("%s on %s, want both on %s (2 free units)", p, n, a[0])
		}
	}
	e.podGroup("apart", 2, domainKey, 60)
	ap := e.gang("apart", 2, 1, true)
	e.message(ap[0], "no domain has room for gang "+e.ns+"/apart", 20*time.Second)
	e.staysPending(2*time.Second, ap...)
}

// A forming gang holds its domain: a second gang reports "every fitting domain is reserved for
// a forming gang", a standalone pod is refused the held nodes, and the second gang binds after
// the holder completes.
func TestHoldAndReservedWake(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 2)
	e.startScheduler(devenv.Profile{})
	e.podGroup("holder", 2, domainKey, 120)
	// holder-1 is gated but is a live unbound member: the gang plans, holder-0 waits at
	// Permit on one node and the gang reserves one GPU on the other for holder-1.
	e.waitWithGatedSibling("holder", "holder-0", "holder-1", true)
	// A gang of one 2-GPU member would fit the other node but for that reservation.
	e.podGroup("second", 1, domainKey, 120)
	sp := e.gang("second", 1, 2, false)
	e.message(sp[0], "no domain has room for gang "+e.ns+"/second: every fitting domain is reserved for a forming gang", 20*time.Second)
	e.message(sp[0], "Room is reserved for forming gangs: "+e.ns+"/holder reserves 1 members on 1 node of a.", 20*time.Second)
	// A standalone pod cannot use the reserved GPU either.
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 2})
	e.message("solo", "node is reserved for a forming gang", 20*time.Second)
	e.ungate("holder-1")
	got := e.bound(15*time.Second, "holder-0", "holder-1")
	e.oneDomain(got, domainKey)
	// The reservation became holder-1's pod: the second gang is woken and now lacks room.
	e.message(sp[0], "no domain has room for gang "+e.ns+"/second: the best domain a has room for 0 of 1 members", 20*time.Second)
	e.domain("b", 2, 2)
	got = e.bound(20*time.Second, sp[0], "solo")
	if d := e.labelOf(got[sp[0]], domainKey); d != "b" {
		t.Fatalf("%s in %s, want b", sp[0], d)
	}
}

// gateWatch remembers gate_total{wait} now; its wait method then waits until a gang member
// has waited at Permit since. Take it before creating the pods that should wait.
type gateWatch struct {
	t    *testing.T
	base float64
}

func newGateWatch(t *testing.T) gateWatch {
	t.Helper()
	return gateWatch{t: t, base: metric(t, "ome_scheduler_gang_gate_total", map[string]string{"result": "wait"})}
}

// waited reports whether gate_total{wait} grows past the base within 20 s.
func (g gateWatch) waited() bool {
	g.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if metric(g.t, "ome_scheduler_gang_gate_total", map[string]string{"result": "wait"}) > g.base {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func (g gateWatch) wait() {
	g.t.Helper()
	if !g.waited() {
		g.t.Fatal("no member reached the Permit wait")
	}
}

// waitWithGatedSibling creates a gang's sibling held by a scheduling gate, then the member
// that plans, and returns once that member waits at Permit: the gang is forming and holds its
// domain until e.ungate(gated). The gated sibling comes first: it is a live template, and a
// gated pod runs no PreFilter, so it could not wake a member parked as incomplete.
func (e *env) waitWithGatedSibling(group, waiter, gated string, apart bool) {
	e.t.Helper()
	gw := newGateWatch(e.t)
	e.pod(devenv.PodSpec{Name: gated, Group: group, GPUs: 1, Apart: apart, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: waiter, Group: group, GPUs: 1, Apart: apart})
	gw.wait()
}

// Cordoned and tainted domains are skipped.
func TestCordonedAndTaintedDomains(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	for _, n := range a {
		e.updateNode(n, func(n *v1.Node) { n.Spec.Unschedulable = true })
	}
	b := e.domain("b", 2, 1)
	for _, n := range b {
		e.updateNode(n, func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule}}
		})
	}
	e.domain("c", 3, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c" {
		t.Fatalf("gang in %s, want c (a cordoned, b tainted)", d)
	}
}

// Surplus members join a committed gang in its domain.
func TestSurplusMemberJoinsDomain(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 3, 1)
	e.domain("b", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 3, 1, true)
	got := e.bound(30*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in %s, want a", d)
	}
	e.distinctNodes(got)
}

// A worker that requires its leader waits for it ("waiting for gang sibling ... to be
// placed"), then both bind.
func TestWorkerWaitsForLeaderAffinity(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	affinity := &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: labelSelector("role", "leader"), TopologyKey: domainKey,
	}}}}
	e.pod(devenv.PodSpec{Name: "g-worker", Group: "g", GPUs: 1, Affinity: affinity, Labels: map[string]string{"role": "worker"}})
	e.pod(devenv.PodSpec{Name: "g-leader", Group: "g", GPUs: 1, Labels: map[string]string{"role": "leader"}})
	e.message("g-worker", "waiting for gang sibling "+e.ns+"/g-leader to be placed", 20*time.Second)
	got := e.bound(8*time.Second, "g-worker", "g-leader")
	e.oneDomain(got, domainKey)
}

// Pods created before their PodGroup wait, then bind when it appears.
func TestMembersBeforePodGroup(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "PodGroup "+e.ns+"/g not resolvable yet", 20*time.Second)
	e.staysPending(3*time.Second, pods...)
	e.podGroup("g", 2, domainKey, 60)
	got := e.bound(30*time.Second, pods...)
	e.distinctNodes(got)
}
