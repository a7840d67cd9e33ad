package plan

import (
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The planner's own unit tests; plugin-level scenarios are in the plugin package's tests.

const testKey = "example.com/clique"

// testNode is a node of domain (none when "") with gpus GPUs.
func testNode(name, domain string, gpus int64) *v1.Node {
	n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{"nvidia.com/gpu": strconv.FormatInt(gpus, 10), v1.ResourceCPU: "64"}).Obj()
	n.Labels = map[string]string{v1.LabelHostname: name}
	if domain != "" {
		n.Labels[testKey] = domain
	}
	return n
}

// staticDomainIndex is a synced domain index over nodes.
func staticDomainIndex(t testing.TB, nodes []*v1.Node) *domainIndex {
	pl := &Planner{}
	if err := pl.IndexNodes(nodes); err != nil {
		t.Fatal(err)
	}
	return pl.domains
}

// shapedMembers are n members of gang g, each requesting a different amount of CPU.
func shapedMembers(g string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		p := st.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%03d", g, i)).Label(gang.Label, g).Obj()
		p.Spec.Containers = []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: *resource.NewMilliQuantity(int64(10+i), resource.DecimalSI)}}}}
		out[i] = p
	}
	return out
}
