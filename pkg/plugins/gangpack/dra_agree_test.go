package gangpack

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
)

const gpuClass = "gpu.example.com"

// TestExplainMatchesPreFilterDRA: on random worlds whose nodes publish DRA GPU and channel
// devices (some already allocated), explain's decision for a gang whose members take devices
// through claim templates, computed from the DRA objects as kubectl ome reads them, is
// PreFilter's, computed from the framework's DRA manager: the same domain, or the same wait.
func TestExplainMatchesPreFilterDRA(t *testing.T) {
	const seeds = 200
	decided := 0
	for seed := int64(0); seed < seeds; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes, m, dra, desc := randomDRAWorld(rng)
		pg, members, tmpl := randomDRAGang(rng)
		dra.Templates = tmpl
		w := newWorldWith(t, m, nil, nodes, members, pg)
		for _, tt := range tmpl {
			if err := w.h.factory.Resource().V1().ResourceClaimTemplates().Informer().GetIndexer().Add(tt); err != nil {
				t.Fatal(err)
			}
		}
		if _, want := w.explainAgrees(t, pg, members[0], dra, fmt.Sprintf("seed %d (%s)", seed, desc)); want != "" {
			decided++
		}
	}
	if decided < seeds/4 || decided > seeds*3/4 {
		t.Errorf("%d of %d worlds placed the gang: the worlds do not exercise both answers", decided, seeds)
	}
	t.Logf("%d of %d worlds placed the gang", decided, seeds)
}

// randomDRAWorld is 2 to 4 cliques of 1 to 4 nodes; each node publishes 0 to 4 GPU devices
// and, half the time, a channel; a quarter of the GPUs are allocated already (to claims the
// API serves with their allocation, and the framework's tracker reports).
func randomDRAWorld(rng *rand.Rand) ([]*v1.Node, *draManager, *explain.DRA, string) {
	var nodes []*v1.Node
	var desc []string
	for d := 0; d < 2+rng.Intn(3); d++ {
		for i := 0; i < 1+rng.Intn(4); i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("d%d-%d", d, i), fmt.Sprintf("d%d", d), 8))
		}
	}
	m := channelManager(nil)
	m.classes[gpuClass] = devices.DriverClass(gpuClass)
	m.allocated = sets.New[structured.DeviceID]()
	dra := &explain.DRA{}
	for _, n := range nodes {
		gpus, channel := rng.Intn(5), rng.Intn(2) == 0
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-gpu"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: gpuClass, NodeName: ptr.To(n.Name), Pool: resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}}}
		var taken []resourceapi.DeviceRequestAllocationResult
		for g := 0; g < gpus; g++ {
			name := fmt.Sprintf("gpu-%d", g)
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: name})
			if rng.Intn(4) == 0 {
				m.allocated.Insert(structured.MakeDeviceID(gpuClass, n.Name, name))
				taken = append(taken, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: gpuClass, Pool: n.Name, Device: name})
			}
		}
		m.slices = append(m.slices, s)
		if len(taken) > 0 {
			dra.Claims = append(dra.Claims, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: n.Name + "-held"},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: taken}}}})
		}
		if channel {
			m.slices = append(m.slices, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-channel"},
				Spec: resourceapi.ResourceSliceSpec{Driver: channelClass, NodeName: ptr.To(n.Name),
					Pool:    resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1},
					Devices: []resourceapi.Device{{Name: "channel-0"}}}})
		}
		desc = append(desc, fmt.Sprintf("%s:%dgpu(%d held)%s", n.Name, gpus, len(taken), map[bool]string{true: "+ch"}[channel]))
	}
	dra.Slices = m.slices
	for _, c := range m.classes {
		dra.Classes = append(dra.Classes, c)
	}
	return nodes, m, dra, strings.Join(desc, " ")
}

// randomDRAGang is 1 to 4 members each taking 1 or 2 GPU devices and, half the time, a channel.
func randomDRAGang(rng *rand.Rand) (*schedv1alpha1.PodGroup, []*v1.Pod, []*resourceapi.ResourceClaimTemplate) {
	n, per, channel := 1+rng.Intn(4), int64(1+rng.Intn(2)), rng.Intn(2) == 0
	tmpl := []*resourceapi.ResourceClaimTemplate{{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "gpus"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: per}}}}}}}}
	var members []*v1.Pod
	for i := 0; i < n; i++ {
		p := gangMember(fmt.Sprintf("new-%d", i), "new", 0)
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("gpus")}}
		if channel {
			withChannel(p)
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "gpus", ResourceClaimTemplateName: ptr.To("gpus")})
		}
		members = append(members, p)
	}
	if channel {
		tmpl = append(tmpl, &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "channel"},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "channel", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: channelClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}}})
	}
	return podGroup("new", int32(n)), members, tmpl
}
