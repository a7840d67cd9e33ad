package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Two gangs of 4 created at once, members interleaved, into one clique of 8 one-GPU nodes:
// each reserves the room of its own plan, so both form at the same time. Neither waits for
// the other's reservation (pin_total{reserved} does not move), and they share the clique on
// disjoint nodes.
func TestTwoGangsFormConcurrentlyInOneClique(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 8, 1)
	e.domain("b", 8, 1)
	e.startScheduler(devenv.Profile{})
	reserved := map[string]string{"result": "reserved"}
	before := metric(t, "ome_scheduler_gang_pin_total", reserved)
	e.podGroup("x", 4, domainKey, 120)
	e.podGroup("y", 4, domainKey, 120)
	var all []string
	for i := 0; i < 4; i++ {
		for _, g := range []string{"x", "y"} {
			name := fmt.Sprintf("%s-%d", g, i)
			e.pod(devenv.PodSpec{Name: name, Group: g, GPUs: 1})
			all = append(all, name)
		}
	}
	got := e.bound(30*time.Second, all...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gangs in %s, want both in a (best fit after the first reservation)", d)
	}
	e.distinctNodes(got)
	if after := metric(t, "ome_scheduler_gang_pin_total", reserved); after != before {
		t.Fatalf("pin_total{reserved} moved from %v to %v: a gang waited for the other's reservation", before, after)
	}
}
