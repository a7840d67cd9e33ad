package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Member room with DRA devices: ResourceSlices as a node-local driver publishes them, claim
// templates per member, kube-scheduler's structured allocator deciding what fits.

const (
	gpuClass     = "gpu.example.com"
	channelClass = "channel.example.com"
)

// slice is what driver publishes for node: n devices prefix-0…
func slice(driver, node, prefix string, n int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver}, Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To(node)}}
	for i := 0; i < n; i++ {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("%s-%d", prefix, i)})
	}
	return s
}

func template(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}}}
}

func exactly(name, class string, n int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}
}

// fakeDevices serves templates from a map and one device view.
type fakeDevices struct {
	templates map[string]*resourceapi.ResourceClaimTemplate
	in        *devices.Inputs
}

func (f *fakeDevices) Claims(pod *v1.Pod) (member, shared []*resourceapi.ResourceClaim, err error) {
	return devices.MemberClaims(pod, func(ns, name string) (*resourceapi.ResourceClaimTemplate, error) {
		if t, ok := f.templates[name]; ok {
			return t, nil
		}
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaimtemplates"), name)
	}, nil)
}

func (f *fakeDevices) View(context.Context) (*devices.Inputs, error) { return f.in, nil }

func (f *fakeDevices) Used(*v1.Pod) []*resourceapi.ResourceClaim { return nil }

// Seq and ChangedSince: the tests change f.in at will, so every device may have changed.
func (f *fakeDevices) Seq() uint64 { return 0 }

func (f *fakeDevices) ChangedSince(string, uint64) bool { return true }

func (f *fakeDevices) Last(string) (uint64, bool) { return 0, false }

func (f *fakeDevices) Settled(string) bool { return true }

// draMember is a member of ns/g requesting one CPU and the claim templates named.
func draMember(name string, templates ...string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID(name).Label(gang.Label, "g").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	for i, t := range templates {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: fmt.Sprintf("c%d", i), ResourceClaimTemplateName: ptr.To(t)})
	}
	return p
}

// draNodes: domain a has two nodes with one GPU device each, b three nodes with four GPU
// devices and no channel, c three nodes with four GPU devices and one channel each. By CPU
// every domain takes the whole gang; a is the tightest.
func draNodes() ([]*v1.Node, []*resourceapi.ResourceSlice) {
	var nodes []*v1.Node
	var slices []*resourceapi.ResourceSlice
	add := func(domain string, n, gpus, channels int) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s%d", domain, i)
			nodes = append(nodes, testNode(name, domain, 0))
			slices = append(slices, slice(gpuClass, name, "gpu", gpus))
			if channels > 0 {
				slices = append(slices, slice(channelClass, name, "channel", channels))
			}
		}
	}
	add("a", 2, 1, 0)
	add("b", 3, 4, 0)
	add("c", 3, 4, 1)
	return nodes, slices
}

func TestChooseByDevices(t *testing.T) {
	templates := map[string]*resourceapi.ResourceClaimTemplate{
		"gpu-1":   template("gpu-1", exactly("gpu", gpuClass, 1)),
		"gpu-4":   template("gpu-4", exactly("gpu", gpuClass, 4)),
		"channel": template("channel", exactly("channel", channelClass, 1)),
		"missing": template("missing", exactly("x", "nvlink.example.com", 1)),
	}
	cases := []struct {
		name       string
		size       int
		templates  []string
		domain     string
		candidates []string
		msg        string // the wait, when domain is ""
	}{
		{"one GPU device each: a has two, b is the best fit by devices", 3, []string{"gpu-1"}, "b", []string{"b0", "b1", "b2"}, ""},
		{"two members fit a's two devices", 2, []string{"gpu-1"}, "a", []string{"a0", "a1"}, ""},
		{"a GPU and a channel each: one member per node, only c has channels", 3, []string{"gpu-1", "channel"}, "c", []string{"c0", "c1", "c2"}, ""},
		{"four GPU devices each: one member per node in b", 3, []string{"gpu-4"}, "b", []string{"b0", "b1", "b2"}, ""},
		{"channels for four: no domain, and the reason names the devices", 4, []string{"gpu-1", "channel"}, "",
			nil, "no domain has room for gang ns/g: insufficient devices of class channel.example.com,gpu.example.com in domain"},
		{"a template that does not exist", 2, []string{"nope"}, "", nil,
			`gang ns/g waits: its members' devices cannot be counted: pod ns/g-0, resource claim "c0": template "nope"`},
		{"a device class that does not exist", 2, []string{"missing"}, "", nil,
			`gang ns/g waits: its members' devices cannot be counted: claim`},
	}
	nodes, slices := draNodes()
	classes := devices.ClassesOf([]*resourceapi.DeviceClass{devices.DriverClass(gpuClass), devices.DriverClass(channelClass)})
	f := devices.DefaultFeatures()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			in := devices.NewInputs(f, structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
				AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()},
				classes, slices, devices.NewCELCache(f))
			var pods []*v1.Pod
			for i := 0; i < tt.size; i++ {
				pods = append(pods, draMember(fmt.Sprintf("g-%d", i), tt.templates...))
			}
			l := &fakeLedger{store: placement.NewStore()}
			p := newTestPlanner(t, l, nodes, pods[0], pods[1:]...)
			p.pl.devices = &fakeDevices{templates: templates, in: in}
			p.info.MinMember = tt.size
			p = p.pl.newCycle(p.logger, pods[0], p.info, p.all, p.pl.reading(pods[0], p.info, p.all), l)
			if st := p.gate(); st != nil {
				t.Fatalf("gate: %v", st)
			}
			cs := framework.NewCycleState()
			res, status := p.choose(cs, nil)
			if tt.domain == "" {
				if status.IsSuccess() || !strings.HasPrefix(status.Message(), tt.msg) {
					t.Fatalf("choose() = %v, want a wait starting %q", status, tt.msg)
				}
				return
			}
			if !status.IsSuccess() {
				t.Fatalf("choose() = %v, want domain %s", status, tt.domain)
			}
			if pin := ReadPin(cs); pin == nil || pin.Domain != tt.domain {
				t.Fatalf("cycle pin %+v, want domain %s", pin, tt.domain)
			}
			if want := sets.New(tt.candidates...); !res.NodeNames.Equal(want) {
				t.Errorf("candidates %v, want %v", sets.List(res.NodeNames), tt.candidates)
			}
		})
	}
}
