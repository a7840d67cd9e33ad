package devices

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func nodeSlice(name, node, pool string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}}}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

func allocatedClaim(pools ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	if len(pools) == 0 {
		return c
	}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, p := range pools {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: "gpu.example.com", Pool: p, Device: "gpu-0"})
	}
	return c
}

// TestChanges: after each event, which of the nodes n1, n2 and n3 changed since the record
// was taken just before it.
func TestChanges(t *testing.T) {
	setup := func(c *Changes) {
		c.Slice(nil, nodeSlice("n1-gpu", "n1", "p1"))
		c.Slice(nil, nodeSlice("n2-gpu", "n2", "p2"))
		c.Slice(nil, nodeSlice("n3-gpu", "n3", "p3"))
		c.Slice(nil, nodeSlice("shared-a", "n1", "p-two")) // one pool published on two nodes
		c.Slice(nil, nodeSlice("shared-b", "n2", "p-two"))
	}
	for _, tc := range []struct {
		name  string
		event func(c *Changes)
		want  map[string]bool
	}{
		{"a node's slice changes", func(c *Changes) {
			c.Slice(nodeSlice("n1-gpu", "n1", "p1"), nodeSlice("n1-gpu", "n1", "p1"))
		}, map[string]bool{"n1": true}},
		{"a slice is deleted", func(c *Changes) { c.Slice(nodeSlice("n3-gpu", "n3", "p3"), nil) }, map[string]bool{"n3": true}},
		{"a slice for all nodes", func(c *Changes) { c.Slice(nil, nodeSlice("net", "", "p-net")) },
			map[string]bool{"n1": true, "n2": true, "n3": true}},
		{"a claim allocated on n2's pool", func(c *Changes) { c.Claim(allocatedClaim(), allocatedClaim("p2")) }, map[string]bool{"n2": true}},
		{"a claim deallocated", func(c *Changes) { c.Claim(allocatedClaim("p2"), allocatedClaim()) }, map[string]bool{"n2": true}},
		{"an allocated claim deleted", func(c *Changes) { c.Claim(allocatedClaim("p3"), nil) }, map[string]bool{"n3": true}},
		{"a claim update that keeps its allocation", func(c *Changes) {
			old, new := allocatedClaim("p1"), allocatedClaim("p1")
			new.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "x", UID: "x"}}
			c.Claim(old, new)
		}, map[string]bool{}},
		{"a claim without an allocation", func(c *Changes) { c.Claim(nil, allocatedClaim()) }, map[string]bool{}},
		{"a pool no slice names", func(c *Changes) { c.Claim(nil, allocatedClaim("unknown")) },
			map[string]bool{"n1": true, "n2": true, "n3": true}},
		{"a pool on two nodes", func(c *Changes) { c.Claim(nil, allocatedClaim("p-two")) },
			map[string]bool{"n1": true, "n2": true, "n3": true}},
		{"a device class", func(c *Changes) { c.Class() }, map[string]bool{"n1": true, "n2": true, "n3": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChanges()
			setup(c)
			before := c.Seq()
			tc.event(c)
			for _, n := range []string{"n1", "n2", "n3"} {
				if got := c.ChangedSince(n, before); got != tc.want[n] {
					t.Errorf("ChangedSince(%s) = %v, want %v", n, got, tc.want[n])
				}
			}
		})
	}
}

// TestChangesHandlers: the informer handlers reach the record, tombstones included.
func TestChangesHandlers(t *testing.T) {
	c := NewChanges()
	c.SliceHandler().OnAdd(nodeSlice("n1-gpu", "n1", "p1"), false)
	s := c.Seq()
	c.ClaimHandler().OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: allocatedClaim("p1")})
	if !c.ChangedSince("n1", s) || c.ChangedSince("n2", s) {
		t.Errorf("a deleted allocated claim (tombstone) on p1: n1 %v (want true), n2 %v (want false)", c.ChangedSince("n1", s), c.ChangedSince("n2", s))
	}
	s = c.Seq()
	c.ClassHandler().OnUpdate(&resourceapi.DeviceClass{}, &resourceapi.DeviceClass{})
	if !c.ChangedSince("n2", s) {
		t.Error("a device class update: n2 unchanged, want changed")
	}
	s = c.Seq()
	c.ClaimHandler().OnUpdate(allocatedClaim("p1"), allocatedClaim("p1"))
	if c.ChangedSince("n1", s) {
		t.Error("a claim update with the same allocation changed n1")
	}
}
