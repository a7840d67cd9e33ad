package explain

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// preferHosts gives pod a preferred node-affinity term toward hosts (weight).
func preferHosts(p *v1.Pod, weight int32, hosts ...string) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight: weight, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hosts}}}}}}}
	return p
}

// A gang of two 1-GPU members that prefers a-1 is placed in a, not in c (the best fit): the
// reason says the preference beat best fit, each fitting domain shows its preference.
func TestExplainPreferenceBeatsBestFit(t *testing.T) {
	for _, tc := range []struct {
		name, host, chosen, reason string
		prefs                      map[string]int64 // per fitting domain; nil: no preference field
	}{
		{"the preferred a beats best fit c", "a-1", "a", "preferred: the members prefer a (preference 100: their preferred node-affinity weights there) over best fit c (preference 0, room 2)",
			map[string]int64{"a": 100, "b": 0, "c": 0}},
		{"preferring the best fit c", "c-2", "c", "best fit among the most preferred (preference 100): c has the least room (2)",
			map[string]int64{"a": 0, "b": 0, "c": 100}},
		{"a preference no node matches: best fit", "nowhere", "c", "best fit: c has the least room (2) of the 3 domains", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster()
			pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "m", UID: "pg-m"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}}
			c.Pods = append(c.Pods, preferHosts(pod("t", "m-0", "", "m", 1), 50, tc.host), preferHosts(pod("t", "m-1", "", "m", 1), 50, tc.host))
			r, err := Explain(c, Request{PodGroup: pg})
			if err != nil {
				t.Fatal(err)
			}
			if r.ChosenDomain != tc.chosen || !strings.HasPrefix(r.Reason, tc.reason) {
				t.Fatalf("chosen %q, reason %q; want %q, %q…", r.ChosenDomain, r.Reason, tc.chosen, tc.reason)
			}
			for _, d := range r.Domains {
				want, ok := tc.prefs[d.Name]
				if (d.Preference != nil) != ok || (ok && *d.Preference != want) {
					t.Errorf("domain %s preference %v, want %v (set %v)", d.Name, d.Preference, want, ok)
				}
				if ok && !strings.Contains(d.Reason, "preference") {
					t.Errorf("domain %s reason %q does not show its preference", d.Name, d.Reason)
				}
			}
			b, _ := json.Marshal(r)
			if strings.Contains(string(b), `"preference"`) != (tc.prefs != nil) {
				t.Errorf("JSON %s: preference fields present %v, want %v", b, !(tc.prefs != nil), tc.prefs != nil)
			}
		})
	}
}
