package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Multi-tenant limits on a real API server.

// A PodGroup naming a topology key outside allowedTopologyKeys waits with a reason naming the
// allowed keys; a gang using an allowed key is placed.
func TestTopologyKeyAllowlist(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1, map[string]string{"kubernetes.io/os": "linux"})
	e.startScheduler(devenv.Profile{Args: devenv.DefaultArgs + "\nallowedTopologyKeys: [\"" + domainKey + "\"]"})
	e.podGroup("os", 2, "kubernetes.io/os", 60)
	e.gang("os", 2, 1, true)
	want := "PodGroup " + e.ns + "/os names topology key kubernetes.io/os, which the scheduler does not allow (allowed: " + domainKey + ")"
	e.message("os-0", want, 20*time.Second)
	e.staysPending(time.Second, "os-0", "os-1")
	e.podGroup("ok", 2, domainKey, 60)
	got := e.bound(20*time.Second, e.gang("ok", 2, 1, true)...)
	e.oneDomain(got, domainKey)
}

// With maxHoldsPerNamespace 1, a second forming gang of the same namespace waits while the
// first holds a domain, and goes on when that hold ends.
func TestHoldCapPerNamespace(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 2, 1)
	e.startScheduler(devenv.Profile{Args: devenv.DefaultArgs + "\nmaxHoldsPerNamespace: 1"})
	e.podGroup("x", 2, domainKey, 120)
	e.waitWithGatedSibling("x", "x-0", "x-1", true)
	e.podGroup("y", 2, domainKey, 120)
	e.gang("y", 2, 1, true)
	msg := e.message("y-0", "forming gangs holding domains", 20*time.Second)
	if !strings.Contains(msg, "namespace "+e.ns+" already has 1 forming gangs holding domains, the most maxHoldsPerNamespace allows") {
		t.Fatalf("message %q", msg)
	}
	e.ungate("x-1")
	e.bound(20*time.Second, "x-0", "x-1", "y-0", "y-1")
}

// Without an allowlist, a gang on a cluster-wide key (kubernetes.io/os: the whole cluster is
// one domain) that never completes reserves only its own members' room: another gang and a
// standalone pod are placed beside it at once, and its reservation ends at its timeout.
func TestClusterWideKeyDoesNotHoldTheCluster(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1, map[string]string{"kubernetes.io/os": "linux"})
	e.domain("b", 3, 1, map[string]string{"kubernetes.io/os": "linux"})
	e.startScheduler(devenv.Profile{})
	e.podGroup("os", 2, "kubernetes.io/os", 8)
	e.waitWithGatedSibling("os", "os-0", "os-1", true) // never ungated
	e.podGroup("other", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(20*time.Second, append(e.gang("other", 2, 1, true), "solo")...)
	e.distinctNodes(got)
	e.staysPending(time.Second, "os-0", "os-1")
	// Its reservation ends at the gang's timeout and the domain rests: the gang does not
	// reserve it again at once, and the node kept for os-1 can be used.
	e.message("os-0", "no domain has room for gang "+e.ns+"/os: domain linux rests after the gang's reservation there expired", 30*time.Second)
	e.pod(devenv.PodSpec{Name: "late", GPUs: 1})
	e.bound(20*time.Second, "late")
}
