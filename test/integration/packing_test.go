package integration

import (
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/test/testenv"
)

const packingArgs = `topologyKey: "topology.ome.io/domain"
podGroupTopologyKeyAnnotation: "ome.io/topology-key"
defaultPermitTimeoutSeconds: 600
gcIntervalSeconds: 60
standaloneDomainPacking: true`

// A25: a standalone pod goes to the partly used domain, keeping the empty one whole.
func TestStandalonePackingPrefersPartlyUsedDomain(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.domain("b", 2, 1)
	e.occupy("busy", a[0], 1)
	e.startScheduler(testenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.pod(testenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(20*time.Second, "solo")
	if got["solo"] != a[1] {
		t.Fatalf("solo on %s, want %s (the free node of the partly used domain a)", got["solo"], a[1])
	}
}

// A26: standalone packing never fights a gang's pin.
func TestPackingNeverMovesAGang(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 3, 1)
	e.startScheduler(testenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	got := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in %s, want a", d)
	}
}

// A27: standalone pods on unlabelled nodes (or nodes with an empty domain value) schedule
// neutrally.
func TestStandaloneOnUnlabelledNodes(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 1, 1)
	empty := e.node(testenv.NodeSpec{Name: "empty", GPUs: 1, Labels: map[string]string{domainKey: "", "pool": "plain"}})
	none := e.node(testenv.NodeSpec{Name: "none", GPUs: 1, Labels: map[string]string{"pool": "plain"}})
	e.startScheduler(testenv.Profile{Args: packingArgs, PercentageOfNodesToScore: 100})
	e.pod(testenv.PodSpec{Name: "p0", GPUs: 1, NodeSelector: map[string]string{"pool": "plain"}})
	e.pod(testenv.PodSpec{Name: "p1", GPUs: 1, NodeSelector: map[string]string{"pool": "plain"}})
	got := e.bound(20*time.Second, "p0", "p1")
	if !(got["p0"] == empty && got["p1"] == none || got["p0"] == none && got["p1"] == empty) {
		t.Fatalf("placement %v, want one pod on each of %s and %s", got, empty, none)
	}
}
