package gangpack

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// TestPlanCacheFollowsDevices: a gang with device claims is planned from the plan cache while
// no device changes, and planned again for the nodes whose devices changed, as the informers
// report it: a claim allocated on a node's pool (with no pod moving there, as when a claim is
// allocated for a pod of another scheduler, or deallocated after its pod is gone) and a slice
// a driver republishes.
func TestPlanCacheFollowsDevices(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8), testNode("b0", "b", 8), testNode("b1", "b", 8), testNode("b2", "b", 8)}
	g := []*v1.Pod{withChannel(gangMember("g-0", "g", 1)), withChannel(gangMember("g-1", "g", 1))}
	m := channelManager(nodes)
	w := newWorldWith(t, m, nil, nodes, g, podGroup("g", 2))
	addTemplate(t, w, "channel", channelClass)
	changes := w.pl.dra.(*draDevices).changes
	now := time.Unix(1_000_000, 0)
	changes.Clock = func() time.Time { return now }
	for _, s := range m.slices {
		changes.Slice(nil, s) // as the slice informer lists them
	}
	now = now.Add(time.Minute) // the DRA manager has caught up: answers are kept by stamp
	pin := func() string {
		t.Helper()
		w.mustPin(g[0])
		c, _ := w.pl.ledger.Commitment("ns/g")
		w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
		return c.Domain
	}
	if d := pin(); d != "a" {
		t.Fatalf("pinned %s, want a: two channels for two members", d)
	}
	// a0's channel is allocated to a claim; no pod of this scheduler moves.
	a0 := structured.MakeDeviceID(channelClass, "a0", "channel-0")
	m.allocated.Insert(a0)
	if d := pin(); d != "a" {
		t.Fatalf("before the claim's event: pinned %s, want a (the cached plan: nothing said a0 changed)", d)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c"}}
	allocated := claim.DeepCopy()
	allocated.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: a0.Driver.String(), Pool: a0.Pool.String(), Device: a0.Device.String()}}}}
	changes.Claim(claim, allocated)
	if d := pin(); d != "b" {
		t.Fatalf("after the claim's allocation: pinned %s, want b (a has one channel left)", d)
	}
	// The claim is deallocated: a fits again.
	m.allocated.Delete(a0)
	changes.Claim(allocated, claim)
	if d := pin(); d != "a" {
		t.Fatalf("after the deallocation: pinned %s, want a", d)
	}
	// The driver republishes a1 without its channel.
	for i, s := range m.slices {
		if s.Spec.NodeName != nil && *s.Spec.NodeName == "a1" {
			old := s
			s = s.DeepCopy()
			s.Spec.Devices, s.Spec.Pool.Generation = nil, 2
			m.slices[i] = s
			changes.Slice(old, s)
		}
	}
	if d := pin(); d != "b" {
		t.Fatalf("after a1's slice lost its channel: pinned %s, want b", d)
	}
}
