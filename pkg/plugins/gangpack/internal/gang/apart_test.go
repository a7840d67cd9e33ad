package gang

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Apart: members stay one per node only when some template's required anti-affinity matches
// some template; templates without such terms are never apart, however many there are.
func TestApart(t *testing.T) {
	pod := func(app string, anti *metav1.LabelSelector) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{"app": app}}}
		if anti != nil {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
				{LabelSelector: anti, TopologyKey: v1.LabelHostname}}}}
		}
		return p
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	many := make([]*v1.Pod, 1000)
	for i := range many {
		many[i] = pod("w", nil)
	}
	for _, tc := range []struct {
		name      string
		templates []*v1.Pod
		want      bool
	}{
		{"no terms", []*v1.Pod{pod("w", nil), pod("w", nil)}, false},
		{"a thousand without terms", many, false},
		{"anti-affinity to the gang", []*v1.Pod{pod("w", sel("w")), pod("w", sel("w"))}, true},
		{"anti-affinity to another app", []*v1.Pod{pod("w", sel("db")), pod("w", sel("db"))}, false},
		{"one owner matching another template", append([]*v1.Pod{pod("leader", sel("w"))}, many...), true},
		{"unparsable selector", []*v1.Pod{pod("w", bad), pod("w", nil)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Apart(tc.templates); got != tc.want {
				t.Fatalf("Apart = %v, want %v", got, tc.want)
			}
		})
	}
}
