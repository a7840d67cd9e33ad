package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/test/testenv"
)

// Multi-tenant limits on a real API server.

// A PodGroup naming a topology key outside allowedTopologyKeys waits with a reason naming the
// allowed keys; a gang using an allowed key is placed.
func TestTopologyKeyAllowlist(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1, map[string]string{"kubernetes.io/os": "linux"})
	e.startScheduler(testenv.Profile{Args: testenv.DefaultArgs + "\nallowedTopologyKeys: [\"" + domainKey + "\"]"})
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
	e.startScheduler(testenv.Profile{Args: testenv.DefaultArgs + "\nmaxHoldsPerNamespace: 1"})
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
