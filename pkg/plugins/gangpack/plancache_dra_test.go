package gangpack

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
)

// draCacheSim is a cacheSim whose gangs take a channel per member (one channel device per
// node), with channels allocated to and taken back from claims of other pods, announced as
// the claim informer would.
type draCacheSim struct {
	*cacheSim
	m       *draManager
	changes *devices.Changes
	sliced  map[string]bool
}

func newDRACacheSim(t *testing.T) *draCacheSim {
	m := channelManager(nil)
	_ = m.ResourceClaims() // the allocated set
	sim := newCacheSimWith(t, m, func(p *v1.Pod) { withChannel(p) })
	addTemplate(t, sim.w, "channel", channelClass)
	s := &draCacheSim{cacheSim: sim, m: m, changes: sim.w.pl.dra.(*draDevices).changes, sliced: map[string]bool{}}
	// Each change is recorded a minute after the last: the DRA manager has always caught up.
	at := time.Unix(1_000_000, 0)
	s.changes.Clock = func() time.Time { at = at.Add(time.Minute); return at }
	s.publish()
	return s
}

// publish gives every node without one its channel slice, as a driver would.
func (s *draCacheSim) publish() {
	for _, name := range s.nodeNames() {
		if s.sliced[name] {
			continue
		}
		sl := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-channel"},
			Spec: resourceapi.ResourceSliceSpec{Driver: channelClass, NodeName: ptr.To(name),
				Pool:    resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "channel-0"}}}}
		s.m.slices = append(s.m.slices, sl)
		s.changes.Slice(nil, sl)
		s.sliced[name] = true
	}
}

// claimOf is an allocated claim of another pod holding node's channel.
func claimOf(node string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: node},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: channelClass, Pool: node, Device: "channel-0"}}}}}}
}

// step applies cacheSim's events (ops 0–5) and two of devices: a node's channel allocated to
// another pod's claim (6), or given back (7).
func (s *draCacheSim) step(op, arg byte) {
	names := s.nodeNames()
	if op%8 < 6 || len(names) == 0 {
		s.cacheSim.step(op%8, arg)
		s.publish()
		return
	}
	node := names[int(arg)%len(names)]
	id := structured.MakeDeviceID(channelClass, node, "channel-0")
	c := claimOf(node)
	unallocated := c.DeepCopy()
	unallocated.Status.Allocation = nil
	switch {
	case op%8 == 6 && !s.m.allocated.Has(id):
		s.m.allocated.Insert(id)
		s.changes.Claim(unallocated, c)
	case op%8 == 7 && s.m.allocated.Has(id):
		s.m.allocated.Delete(id)
		s.changes.Claim(c, nil)
	}
}

// The plan cache never changes a decision for gangs with device claims either: after any
// sequence of cacheSim's events and channels allocated to other pods' claims and given back,
// PreFilter through the cache decides what a planning from scratch decides.
func TestPlanCacheMatchesScratchDRA(t *testing.T) {
	runCacheSims(t, 40, 7, func(t *testing.T) stepper { return newDRACacheSim(t) })
}

// Without the claim events the cache would keep a stale answer: the property above is only
// as good as the events, so check that a missed event is seen by it.
func TestPlanCacheDRAStaleWithoutEvents(t *testing.T) {
	s := newDRACacheSim(t)
	s.check(-1)
	for _, n := range []string{"n0-0", "n1-0", "n2-0", "n3-0"} { // every domain loses a channel, silently
		s.m.allocated.Insert(structured.MakeDeviceID(channelClass, n, "channel-0"))
	}
	s.sync()
	differ := slices.ContainsFunc(s.probes, func(p *v1.Pod) bool {
		return fmt.Sprint(s.preFilterOnce(p, true)) != fmt.Sprint(s.preFilterOnce(p, false))
	})
	if !differ {
		t.Fatal("a silent allocation changed no probe's cached decision: the DRA property would not catch a missed event")
	}
}
