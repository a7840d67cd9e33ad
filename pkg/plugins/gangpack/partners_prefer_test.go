package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// preferNodes gives each pod a preferred node-affinity term toward the named nodes (weight 50).
func preferNodes(pods []*v1.Pod, hosts ...string) []*v1.Pod {
	for _, p := range pods {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 50, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hosts}}}}}}}
	}
	return pods
}

// A placement group whose partners prefer nodes of c5 is pinned there, though c4 is the best
// fit for its four members; every partner's pin counts as preferred. Without the preference
// (the partners of G1) the group goes to the best fit.
func TestPartnerGroupPreference(t *testing.T) {
	metrics.Register()
	for _, tc := range []struct {
		name   string
		hosts  []string
		domain string
		result string
	}{
		{"preferred nodes in c5", []string{"c5-1", "c5-2", "c5-3", "c5-4"}, "c5", metrics.PinPreferred},
		{"no preference: best fit", nil, "c4", metrics.PinPinned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c5", "", 5))
			a, b := members("a", 2), members("b", 2)
			if tc.hosts != nil {
				preferNodes(slices.Concat(a, b), tc.hosts...)
			}
			w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
				partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
			before, _ := testutil.GetCounterMetricValue(metrics.PinTotal.WithLabelValues(tc.result))
			w.mustPin(a[0])
			pa, _ := w.pl.ledger.Commitment("ns/a")
			pb, _ := w.pl.ledger.Commitment("ns/b")
			if pa.Domain != tc.domain || pb.Domain != tc.domain {
				t.Fatalf("pins a=%s b=%s, want both in %s", pa.Domain, pb.Domain, tc.domain)
			}
			if after, _ := testutil.GetCounterMetricValue(metrics.PinTotal.WithLabelValues(tc.result)); after != before+2 {
				t.Errorf("gang_pin_total{result=%q} %v → %v, want +2 (one per partner)", tc.result, before, after)
			}
		})
	}
}
