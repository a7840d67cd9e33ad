package gangpack

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// The shape cap: planning a gang whose members differ in shape.

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
				w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
			}
		})
	}
}
