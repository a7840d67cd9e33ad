package devices

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

const (
	gpuDriver     = "gpu.example.com"
	channelDriver = "channel.example.com"
	gpuClass      = "gpu.example.com"
	channelClass  = "channel.example.com"
	ns            = "team"
)

// classes is the DeviceClassLister the tests use.
type classes = Classes

func class(name, expr string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
			{CEL: &resourceapi.CELDeviceSelector{Expression: expr}},
		}},
	}
}

func stdClasses() classes {
	return classes{
		gpuClass:     class(gpuClass, `device.driver == "gpu.example.com"`),
		channelClass: class(channelClass, `device.driver == "channel.example.com"`),
	}
}

// driverSlice is one ResourceSlice as a node-local DRA driver publishes it: pool
// named after the node, one slice per pool, devices prefix-0..prefix-(n-1) with an
// integer attribute "index".
func driverSlice(driver, node, prefix string, n int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := 0; i < n; i++ {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:       fmt.Sprintf("%s-%d", prefix, i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To(int64(i))}},
		})
	}
	return s
}

// nodeSlices publishes gpus GPUs and channels channel devices for node.
func nodeSlices(node string, gpus, channels int) []*resourceapi.ResourceSlice {
	return []*resourceapi.ResourceSlice{
		driverSlice(gpuDriver, node, "gpu", gpus),
		driverSlice(channelDriver, node, "channel", channels),
	}
}

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

func request(name, cls string, count int64, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: cls, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
	}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return r
}

func claim(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
	}
}

func gpus(n int64) *resourceapi.ResourceClaim { return claim("gpus", request("gpu", gpuClass, n)) }

func channelClaim() *resourceapi.ResourceClaim {
	return claim("channel", request("channel", channelClass, 1))
}

// allocatedOn returns c with an allocation of one channel device on node, pinned
// to it with a node selector as the allocator produces for node-local devices.
func allocatedOn(c *resourceapi.ResourceClaim, nodeName string) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	c.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "channel", Driver: channelDriver, Pool: nodeName, Device: "channel-0"},
		}},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
		}}},
	}
	return c
}

func devIDs(driver, pool string, names ...string) []structured.DeviceID {
	out := make([]structured.DeviceID, 0, len(names))
	for _, n := range names {
		out = append(out, structured.MakeDeviceID(driver, pool, n))
	}
	return out
}

func allocatedState(ids ...structured.DeviceID) structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         sets.New(ids...),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
}

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
