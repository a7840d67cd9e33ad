package gangpack

import (
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// PreFilter's checks before planning: the PodGroup's interpretation and the topology-key
// allowlist.

func chartArgs() *gang.Args {
	return &gang.Args{
		PodGroupTopologyKeyAnnotation:  "ome.io/topology-key",
		UnsupportedPlacementGroupLabel: "ome.io/placement-group",
		DefaultPermitTimeoutSeconds:    ptr.To[int64](600),
		GCIntervalSeconds:              ptr.To[int64](60),
	}
}

func member(labels map[string]string) *v1.Pod {
	l := map[string]string{PodGroupLabel: "g"}
	for k, v := range labels {
		l[k] = v
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: l}}
}

func group(min int32, annotations, labels map[string]string, timeout *int32) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "uid-1", Annotations: annotations, Labels: labels},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: min, ScheduleTimeoutSeconds: timeout},
	}
}

// Absurd and malformed PodGroups get the contract's reasons, in the ladder's order.
func TestInterpretPodGroup(t *testing.T) {
	key := map[string]string{"ome.io/topology-key": "nvidia.com/gpu.clique"}
	noFallback := chartArgs()
	noAnnotationArg := chartArgs()
	noAnnotationArg.PodGroupTopologyKeyAnnotation = ""
	noDefault := chartArgs()
	noDefault.DefaultPermitTimeoutSeconds = nil
	withFallback := chartArgs()
	withFallback.TopologyKey = "topology.ome.io/domain"
	hugeDefault := chartArgs()
	hugeDefault.DefaultPermitTimeoutSeconds = ptr.To[int64](9223372036)
	for _, tc := range []struct {
		name    string
		args    *gang.Args
		pod     *v1.Pod
		pg      *schedv1alpha1.PodGroup
		code    fwk.Code
		msg     string
		wantKey string
		timeout time.Duration
	}{
		{"zero minMember", noFallback, member(nil), group(0, key, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare a positive minMember", "", 0},
		{"negative minMember", noFallback, member(nil), group(-5, key, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare a positive minMember", "", 0},
		{"minimum int32 minMember", noFallback, member(nil), group(math.MinInt32, key, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare a positive minMember", "", 0},
		{"10,000 members accepted", noFallback, member(nil), group(10000, key, nil, nil), fwk.Success, "", "nvidia.com/gpu.clique", 600 * time.Second},
		{"max int32 members accepted", noFallback, member(nil), group(math.MaxInt32, key, nil, nil), fwk.Success, "", "nvidia.com/gpu.clique", 600 * time.Second},
		{"missing annotation, no fallback", noFallback, member(nil), group(2, nil, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare ome.io/topology-key or the scheduler must configure topologyKey", "", 0},
		{"empty annotation, no fallback", noFallback, member(nil), group(2, map[string]string{"ome.io/topology-key": ""}, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare ome.io/topology-key or the scheduler must configure topologyKey", "", 0},
		{"no annotation argument", noAnnotationArg, member(nil), group(2, key, nil, nil), fwk.Unschedulable, "scheduler must configure topologyKey or podGroupTopologyKeyAnnotation for gang pods", "", 0},
		{"fallback key", withFallback, member(nil), group(2, nil, nil, nil), fwk.Success, "", "topology.ome.io/domain", 600 * time.Second},
		{"annotation wins over fallback", withFallback, member(nil), group(2, key, nil, nil), fwk.Success, "", "nvidia.com/gpu.clique", 600 * time.Second},
		{"malformed label key as annotation value is used as is", noFallback, member(nil), group(2, map[string]string{"ome.io/topology-key": "not a key/"}, nil, nil), fwk.Success, "", "not a key/", 600 * time.Second},
		{"placement group on the pod", noFallback, member(map[string]string{"ome.io/placement-group": ""}), group(2, key, nil, nil), fwk.Unschedulable, "partner placement groups are not supported", "", 0},
		{"placement group on the PodGroup", noFallback, member(nil), group(2, key, map[string]string{"ome.io/placement-group": "x"}, nil), fwk.Unschedulable, "partner placement groups are not supported", "", 0},
		{"minMember checked before the key", noFallback, member(nil), group(0, nil, nil, nil), fwk.Unschedulable, "PodGroup ns/g must declare a positive minMember", "", 0},
		{"no timeout anywhere", noDefault, member(nil), group(2, key, nil, nil), fwk.UnschedulableAndUnresolvable, "PodGroup ns/g must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds", "", 0},
		{"zero PodGroup timeout falls back", noFallback, member(nil), group(2, key, nil, ptr.To[int32](0)), fwk.Success, "", "nvidia.com/gpu.clique", 600 * time.Second},
		{"negative PodGroup timeout without default", noDefault, member(nil), group(2, key, nil, ptr.To[int32](-1)), fwk.UnschedulableAndUnresolvable, "PodGroup ns/g must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds", "", 0},
		{"PodGroup timeout wins", noFallback, member(nil), group(2, key, nil, ptr.To[int32](30)), fwk.Success, "", "nvidia.com/gpu.clique", 30 * time.Second},
		{"huge PodGroup timeout capped at kube-scheduler's Permit cap", noFallback, member(nil), group(2, key, nil, ptr.To[int32](math.MaxInt32)), fwk.Success, "", "nvidia.com/gpu.clique", 15 * time.Minute},
		{"largest default capped too", hugeDefault, member(nil), group(2, key, nil, nil), fwk.Success, "", "nvidia.com/gpu.clique", 15 * time.Minute},
		{"PodGroup timeout just under the cap", noFallback, member(nil), group(2, key, nil, ptr.To[int32](899)), fwk.Success, "", "nvidia.com/gpu.clique", 899 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, st := gang.Interpret(tc.args, tc.pod, tc.pg)
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Fatalf("status %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			if tc.code != fwk.Success {
				return
			}
			if info.Key != "ns/g" || info.UID != "uid-1" || info.TopologyKey != tc.wantKey || info.Timeout != tc.timeout || info.MinMember != int(tc.pg.Spec.MinMember) {
				t.Fatalf("gang info %+v", info)
			}
		})
	}
}

// knownPrefixes are the texts gang.Interpret may return.
var knownPrefixes = []string{
	"PodGroup ns/g must declare a positive minMember",
	"PodGroup ns/g must declare ",
	"scheduler must configure topologyKey or podGroupTopologyKeyAnnotation for gang pods",
	"partner placement groups are not supported",
	"PodGroup ns/g must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds",
}

// Any PodGroup content gets either a valid gang (positive minMember, a key, a positive
// timeout) or one of the contract's reasons; never a panic.
func FuzzPodGroupInterpretation(f *testing.F) {
	f.Add(int32(2), "nvidia.com/gpu.clique", true, int32(300), false, false, "")
	f.Add(int32(0), "", false, int32(0), false, false, "")
	f.Add(int32(-1), "not a key/", true, int32(-5), true, false, "x")
	f.Add(int32(10000), "ome.io/../x", true, int32(1), false, true, "fallback.io/k")
	f.Fuzz(func(t *testing.T, min int32, annotation string, hasTimeout bool, timeout int32, labelPod, labelGroup bool, fallback string) {
		args := chartArgs()
		args.TopologyKey = fallback
		var tp *int32
		if hasTimeout {
			tp = &timeout
		}
		podLabels, groupLabels := map[string]string{}, map[string]string{}
		if labelPod {
			podLabels["ome.io/placement-group"] = annotation
		}
		if labelGroup {
			groupLabels["ome.io/placement-group"] = ""
		}
		info, st := gang.Interpret(args, member(podLabels), group(min, map[string]string{"ome.io/topology-key": annotation}, groupLabels, tp))
		if st.IsSuccess() {
			if info.MinMember <= 0 || info.TopologyKey == "" || info.Timeout <= 0 {
				t.Fatalf("accepted an invalid gang: %+v", info)
			}
			return
		}
		for _, p := range knownPrefixes {
			if strings.HasPrefix(st.Message(), p) {
				return
			}
		}
		t.Fatalf("unknown reason %q", st.Message())
	})
}

func TestTopologyKeyAllowlist(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1)}
	for _, tc := range []struct {
		name    string
		allowed []string
		key     string // annotation value; "" = none
		want    string // "" = planned
	}{
		{name: "no allowlist, any key", key: "kubernetes.io/os"},
		{name: "listed key", allowed: []string{"example.com/rack"}, key: "example.com/rack"},
		{name: "fallback key is always allowed", allowed: []string{"example.com/rack"}},
		{name: "other key refused", allowed: []string{"example.com/rack", "example.com/zone"}, key: "kubernetes.io/os",
			want: "PodGroup ns/g names topology key kubernetes.io/os, which the scheduler does not allow (allowed: " + testKey + ", example.com/rack, example.com/zone)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := testArgs()
			args.AllowedTopologyKeys = tc.allowed
			pg := podGroup("g", 1)
			if tc.key != "" {
				pg.Annotations = map[string]string{"ome.io/topology-key": tc.key}
			}
			m := gangMember("g-0", "g", 1)
			w := newWorld(t, args, nodes, []*v1.Pod{m}, pg)
			_, st := w.preFilter(m)
			if tc.want == "" {
				if st.Message() != "" && strings.Contains(st.Message(), "does not allow") {
					t.Fatalf("PreFilter = %v, want the key accepted", st)
				}
				return
			}
			if st.Code() != fwk.Unschedulable || st.Message() != tc.want {
				t.Fatalf("PreFilter = %v, want %q", st, tc.want)
			}
		})
	}
}
