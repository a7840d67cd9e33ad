package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Domain preferences with OME's migration shape (docs/design.md §4.1): the replacement
// Instance is a new gang whose pods carry a required node affinity "not on the node being
// left" and a preferred one (weight 50) toward the hint nodes, while the old gang keeps
// running.

// migration creates n members of a migrating gang: gpus each, never on from, preferring hints.
func (e *env) migration(group string, n int, gpus int64, from string, hints ...string) []string {
	e.t.Helper()
	aff := &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpNotIn, Values: []string{from}}}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 50, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hints}}}}},
	}}
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		e.pod(devenv.PodSpec{Name: name, Group: group, GPUs: gpus, Affinity: aff})
		names = append(names, name)
	}
	return names
}

// Cliques ca (2 nodes), cb (4) and cc (2) of 8 GPUs; the old gang runs one 4-GPU member on
// each node of ca. A migration of it (two 4-GPU members, never on old-0's node) whose hints
// are in cb lands on the hint nodes, though cc is the best fit; a second one whose hint is in
// ca, which cannot take it without the node being left, lands in the best fit cc.
func TestMigrationLandsByHint(t *testing.T) {
	e := newEnv(t)
	ca := e.domain("ca", 2, 8)
	cb := e.domain("cb", 4, 8)
	e.domain("cc", 2, 8)
	e.startScheduler(devenv.Profile{})
	e.podGroup("old", 2, domainKey, 60)
	old := e.gang("old", 2, 4, true)
	placedOld := e.bound(30*time.Second, old...)
	if d := e.oneDomain(placedOld, domainKey); d != "ca" {
		t.Fatalf("old gang in %s, want ca (best fit, ties by name)", d)
	}
	from := placedOld["old-0"]
	preferredBefore := metric(t, "ome_scheduler_gang_pin_total", map[string]string{"result": "preferred"})

	e.podGroup("mig", 2, domainKey, 60)
	got := e.bound(30*time.Second, e.migration("mig", 2, 4, from, cb[1], cb[2])...)
	for pod, node := range got {
		if !slices.Contains([]string{cb[1], cb[2]}, node) {
			t.Errorf("%s on %s, want a hint node (%s, %s)", pod, node, cb[1], cb[2])
		}
	}
	if v := metric(t, "ome_scheduler_gang_pin_total", map[string]string{"result": "preferred"}); v != preferredBefore+1 {
		t.Errorf("gang_pin_total{result=preferred} %v → %v, want one more", preferredBefore, v)
	}

	other := ca[0]
	if other == from {
		other = ca[1]
	}
	e.podGroup("mig2", 2, domainKey, 60)
	got2 := e.bound(30*time.Second, e.migration("mig2", 2, 4, from, other)...)
	if d := e.oneDomain(got2, domainKey); d != "cc" {
		t.Errorf("second migration in %s (%v), want cc: its hint's clique ca cannot take it without %s", d, got2, from)
	}
	for pod, node := range got2 {
		if node == from {
			t.Errorf("%s on %s, the node being left", pod, node)
		}
	}
}
