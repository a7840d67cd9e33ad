package plan

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// prefers adds a preferred node-affinity term (hostname in hosts, weight) to pod.
func prefers(pod *v1.Pod, weight int32, hosts ...string) *v1.Pod {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, v1.PreferredSchedulingTerm{
		Weight: weight,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hosts}}},
	})
	return pod
}

// avoids adds OME's migration requirement to pod: not on the given host.
func avoids(pod *v1.Pod, host string) *v1.Pod {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	pod.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpNotIn, Values: []string{host}}}}}}}
	return pod
}

// Domain preferences over chooseNodes (room for 4 members in a, 6 in b, 2 in c; a gang of
// three 4-GPU members): the most preferred fitting domain wins, then best fit.
func TestChoosePreferences(t *testing.T) {
	metrics.Register()
	members := func(f func(i int, p *v1.Pod) *v1.Pod) []*v1.Pod {
		out := []*v1.Pod{gpuMember("g-0", "4"), gpuMember("g-1", "4"), gpuMember("g-2", "4")}
		for i := range out {
			out[i] = f(i, out[i])
		}
		return out
	}
	all := func(weight int32, hosts ...string) func(int, *v1.Pod) *v1.Pod {
		return func(_ int, p *v1.Pod) *v1.Pod { return prefers(p, weight, hosts...) }
	}
	cases := []struct {
		name        string
		pods        []*v1.Pod
		off         bool
		domain      string
		preferences map[string]int64
		result      string // the gang_pin_total result counted
	}{
		{"no preferences: best fit", members(func(_ int, p *v1.Pod) *v1.Pod { return p }), false, "a", nil, metrics.PinPinned},
		{"the hint nodes' domain beats best fit", members(all(50, "b1", "b2")), false, "b", map[string]int64{"a": 0, "b": 150}, metrics.PinPreferred},
		{"preferred and best fit agree", members(all(50, "a0")), false, "a", map[string]int64{"a": 100, "b": 0}, metrics.PinPinned},
		{"a preferred domain too small for the gang loses", members(all(100, "c0")), false, "a", nil, metrics.PinPinned},
		{"equal preferences: best fit", members(all(50, "a1", "b1")), false, "a", nil, metrics.PinPinned},
		{"each template by its own terms", members(func(i int, p *v1.Pod) *v1.Pod {
			if i == 0 {
				return prefers(p, 10, "b0", "b1", "b2")
			}
			return prefers(p, 10, "a0", "a1")
		}), false, "a", map[string]int64{"a": 20, "b": 10}, metrics.PinPinned},
		{"hard constraints first: the node being left holds no member, the hint node two", members(func(_ int, p *v1.Pod) *v1.Pod {
			return prefers(avoids(p, "b0"), 100, "b1")
		}), false, "b", map[string]int64{"a": 0, "b": 200}, metrics.PinPreferred},
		{"domainPreferences: None", members(all(50, "b1", "b2")), true, "a", nil, metrics.PinPinned},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLedger{store: placement.NewStore()}
			p := newTestPlanner(t, l, chooseNodes(), tt.pods[0], tt.pods[1:]...)
			if tt.off {
				p.pl.args.DomainPreferences = gang.PreferNone
			}
			p = p.pl.newCycle(p.logger, tt.pods[0], p.info, p.all, p.pl.reading(tt.pods[0], p.info, p.all), l)
			if st := p.gate(); st != nil {
				t.Fatalf("gate: %v", st)
			}
			before, _ := testutil.GetCounterMetricValue(metrics.PinTotal.WithLabelValues(tt.result))
			cs := framework.NewCycleState()
			if _, st := p.choose(cs, nil); !st.IsSuccess() {
				t.Fatalf("choose() = %v, want domain %s", st, tt.domain)
			}
			if pin := ReadPin(cs); pin == nil || pin.Domain != tt.domain {
				t.Fatalf("cycle pin %+v, want domain %s", pin, tt.domain)
			}
			if !equalPrefs(p.prefs, tt.preferences) {
				t.Errorf("preferences %v, want %v", p.prefs, tt.preferences)
			}
			if after, _ := testutil.GetCounterMetricValue(metrics.PinTotal.WithLabelValues(tt.result)); after != before+1 {
				t.Errorf("gang_pin_total{result=%q} %v → %v, want one more", tt.result, before, after)
			}
		})
	}
}

func equalPrefs(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
