package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const packingArgs = `topologyKey: "topology.ome.io/domain"
podGroupTopologyKeyAnnotation: "ome.io/topology-key"
defaultPermitTimeoutSeconds: 600
gcIntervalSeconds: 60
standaloneDomainPacking: true`

// A standalone pod goes to the partly used domain, keeping the empty one whole.
func TestStandalonePackingPrefersPartlyUsedDomain(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.domain("b", 2, 1)
	e.occupy("busy", a[0], 1)
	e.startScheduler(devenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(20*time.Second, "solo")
	if got["solo"] != a[1] {
		t.Fatalf("solo on %s, want %s (the free node of the partly used domain a)", got["solo"], a[1])
	}
}

// Standalone packing never fights a gang's pin.
func TestPackingNeverMovesAGang(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 3, 1)
	e.startScheduler(devenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	got := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in %s, want a", d)
	}
}

// Standalone pods on unlabelled nodes (or nodes with an empty domain value) schedule
// neutrally.
func TestStandaloneOnUnlabelledNodes(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 1, 1)
	empty := e.node(devenv.NodeSpec{Name: "empty", GPUs: 1, Labels: map[string]string{domainKey: "", "pool": "plain"}})
	none := e.node(devenv.NodeSpec{Name: "none", GPUs: 1, Labels: map[string]string{"pool": "plain"}})
	e.startScheduler(devenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.pod(devenv.PodSpec{Name: "p0", GPUs: 1, NodeSelector: map[string]string{"pool": "plain"}})
	e.pod(devenv.PodSpec{Name: "p1", GPUs: 1, NodeSelector: map[string]string{"pool": "plain"}})
	got := e.bound(20*time.Second, "p0", "p1")
	if !(got["p0"] == empty && got["p1"] == none || got["p0"] == none && got["p1"] == empty) {
		t.Fatalf("placement %v, want one pod on each of %s and %s", got, empty, none)
	}
}

// Standalone pods are signed (SignPod), so kube-scheduler 1.35's opportunistic batching
// serves identical standalone pods from the previous pod's scoring; gang members never are.
// PodTopologySpread refuses to sign any pod while it has system default constraints (in the
// stock profile too), so batching needs `defaultingType: List` without default constraints.
func TestStandalonePodsAreBatched(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 6, 1)
	e.startScheduler(devenv.Profile{PluginConfig: []devenv.PluginArgs{
		{Name: "PodTopologySpread", Args: map[string]any{"defaultingType": "List"}},
	}})
	hintUsed := map[string]string{"profile": devenv.SchedulerName, "result": "hint_used"}
	before, _ := lookupMetric(t, "scheduler_batch_attempts_total", hintUsed)
	var pods []string
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("solo-%d", i)
		e.pod(devenv.PodSpec{Name: name, GPUs: 1})
		pods = append(pods, name)
	}
	got := e.bound(30*time.Second, pods...)
	e.distinctNodes(got)
	after, _ := lookupMetric(t, "scheduler_batch_attempts_total", hintUsed)
	if after <= before {
		t.Fatalf("scheduler_batch_attempts_total{result=hint_used} did not grow (%v → %v): standalone pods were not batched", before, after)
	}
}
