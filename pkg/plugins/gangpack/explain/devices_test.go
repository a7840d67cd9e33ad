package explain

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
)

const gpuDRA = "gpu.example.com"

// draCluster publishes DRA GPU devices on the cluster's nodes: 1 per node in a, 4 in b, 2
// in c (the cluster's nvidia.com/gpu extended resources are not what the claims ask for).
func draCluster() *Cluster {
	c := cluster()
	c.DRA = &DRA{Classes: []*resourceapi.DeviceClass{devices.DriverClass(gpuDRA)}}
	per := map[string]int{"a": 1, "b": 4, "c": 2}
	for _, n := range c.Nodes {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: gpuDRA, NodeName: ptr.To(n.Name), Pool: resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}}}
		for i := 0; i < per[n.Labels[clique]]; i++ {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		c.DRA.Slices = append(c.DRA.Slices, s)
	}
	return c
}

func gpuTemplate(n int64) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuDRA, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}}}}}}
}

// whatif --claim-template: the domain is chosen by the devices the claims take, each
// domain shows its free devices, and a gang no domain's devices take says so.
func TestWhatIfClaimTemplate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size        int
		perMember   int64
		chosen      string
		reasonStart string
	}{
		{"three members of one GPU device: c has 4 devices, b 8; c is the best fit", 3, 1, "c", "best fit: c has the least room (4)"},
		{"two members of two devices: one per node in c, two per node in b; c", 2, 2, "c", "best fit: c"},
		{"four members of two devices: only b", 4, 2, "b", "best fit: b"},
		{"six members of two devices: nowhere, by devices", 6, 2, "", "no domain has room for gang t/kubectl-ome-whatif: insufficient devices of class gpu.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Shape{Namespace: "t", MinMember: tc.size, ClaimTemplate: gpuTemplate(tc.perMember)}
			r, err := WhatIf(draCluster(), s)
			if err != nil {
				t.Fatal(err)
			}
			if r.ChosenDomain != tc.chosen || !strings.HasPrefix(r.Reason, tc.reasonStart) {
				t.Fatalf("chosen %q (%s), want %q (%s…)", r.ChosenDomain, r.Reason, tc.chosen, tc.reasonStart)
			}
			for _, d := range r.Domains {
				want := map[string]int{"a": 2, "b": 8, "c": 4}[d.Name]
				if d.Devices[gpuDRA] != want {
					t.Errorf("domain %s devices %v, want %s=%d", d.Name, d.Devices, gpuDRA, want)
				}
			}
			var buf bytes.Buffer
			if err := r.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "devices: "+gpuDRA+"=8") {
				t.Errorf("table does not show b's devices: %q (%v)", buf.String(), err)
			}
		})
	}
}
