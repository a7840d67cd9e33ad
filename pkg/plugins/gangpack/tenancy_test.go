package gangpack

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Multi-tenant limits: which topology keys a PodGroup may name, and how many gangs of one
// namespace may hold domains at once.

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

func TestAllowedTopologyKeysValidation(t *testing.T) {
	args := testArgs()
	args.AllowedTopologyKeys = []string{"example.com/rack", "not a key"}
	if err := gang.ValidateArgs(args); err == nil || !strings.Contains(err.Error(), `allowedTopologyKeys: "not a key" is not a valid node label key`) {
		t.Fatalf("gang.ValidateArgs = %v", err)
	}
	args = testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](-1)
	if err := gang.ValidateArgs(args); err == nil || err.Error() != "maxHoldsPerNamespace must be between 0 and 1000000" {
		t.Fatalf("gang.ValidateArgs = %v", err)
	}
}

func TestHoldCapPerNamespace(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1)}
	x0, x1 := gangMember("x-0", "x", 1), gangMember("x-1", "x", 1)
	y0, y1 := gangMember("y-0", "y", 1), gangMember("y-1", "y", 1)
	args := testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](1)
	w := newWorld(t, args, nodes, []*v1.Pod{x0, x1, y0, y1}, podGroup("x", 2), podGroup("y", 2))
	w.mustPin(x0) // x holds a domain while it forms
	_, st := w.preFilter(y0)
	if want := msg.HoldCap("ns", 1); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(y-0) = %v, want %q", st, want)
	}
	if len(w.pl.ledger.Blocked()) != 1 {
		t.Fatal("the capped pod is not parked for the next hold lift")
	}
	w.mustPin(x1) // x's own members are not capped
}

// shapedMembers returns n members of gang g whose CPU requests all differ (n shapes).
func shapedMembers(g string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		p := gangMember(fmt.Sprintf("%s-%03d", g, i), g, 0)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(int64(10+i), resource.DecimalSI)}
		out[i] = p
	}
	return out
}

// A gang with more shapes than the shape cap still plans and pins.
func TestShapeCap(t *testing.T) {
	members := shapedMembers("g", 40)
	nodes := []*v1.Node{testNode("a0", "a", 0), testNode("a1", "a", 0)}
	w := newWorld(t, nil, nodes, members, podGroup("g", 40))
	if _, st := w.preFilter(members[0]); !st.IsSuccess() {
		t.Fatalf("PreFilter of a 40-shape gang = %v, want a pin", st)
	}
}

// BenchmarkPlanManyShapes measures PreFilter of a gang whose 200 members all differ in shape,
// with the shape cap and without it (maxShapes raised above the count).
func BenchmarkPlanManyShapes(b *testing.B) {
	for _, limit := range []int{16, 1000} {
		b.Run(fmt.Sprintf("maxShapes=%d", limit), func(b *testing.B) {
			defer plan.SetShapeCap(limit)()
			var nodes []*v1.Node
			for d := 0; d < 8; d++ {
				for i := 0; i < 8; i++ {
					nodes = append(nodes, testNode(fmt.Sprintf("d%d-%d", d, i), fmt.Sprintf("d%d", d), 0))
				}
			}
			members := shapedMembers("g", 200)
			w := newWorld(b, nil, nodes, members, podGroup("g", 200))
			infos := w.nodeInfos()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos)
				w.pl.ledger.ReleaseSilently(klog.Background(), "ns/g", placement.AnyID)
			}
		})
	}
}

// The preemption switch is accepted (the chart renders it).
func TestPreemptionArgumentAccepted(t *testing.T) {
	args, err := gang.DecodeArgs(&runtime.Unknown{ContentType: runtime.ContentTypeJSON,
		Raw: []byte(`{"gcIntervalSeconds":60,"preemption":true}`)})
	if err != nil || !args.Preemption {
		t.Fatalf("gang.DecodeArgs = %+v, %v; want preemption true accepted", args, err)
	}
}
