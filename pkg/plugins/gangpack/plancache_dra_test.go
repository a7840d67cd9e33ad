package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
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
	var nodes []*v1.Node
	for d := 0; d < 4; d++ {
		for i := 0; i < 3; i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("n%d-%d", d, i), fmt.Sprintf("d%d", d), int64(2+2*(i%2))))
		}
	}
	probes := []*v1.Pod{gangMember("p-0", "p", 2), gangMember("p-1", "p", 2), gangMember("q-0", "q", 1),
		gangMember("q-1", "q", 1), gangMember("q-2", "q", 1), gangMember("o-0", "o", 3), gangMember("o-1", "o", 3)}
	for _, p := range probes {
		withChannel(p)
	}
	m := channelManager(nil)
	w := newWorldWith(t, m, nil, nodes, probes, podGroup("p", 2), podGroup("q", 3), podGroup("o", 2))
	addTemplate(t, w, "channel", channelClass)
	s := &draCacheSim{cacheSim: &cacheSim{t: t, w: w, logger: klog.FromContext(w.ctx), nodes: map[string]*v1.Node{},
		probes: []*v1.Pod{probes[0], probes[2]}}, m: m, changes: w.pl.dra.(*draDevices).changes, sliced: map[string]bool{}}
	s.cache = inPlaceSnapshot(w, nodes)
	for _, n := range nodes {
		s.nodes[n.Name] = n
	}
	s.publish()
	_ = m.ResourceClaims() // allocated set
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
	for seed := 0; seed < 40; seed++ {
		ops := make([]byte, 48)
		x := uint32(seed*2654435761 + 7)
		for i := range ops {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			ops[i] = byte(x)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newDRACacheSim(t)
			s.check(-1)
			for i := 0; i+1 < len(ops); i += 2 {
				s.step(ops[i], ops[i+1])
				s.check(i / 2)
			}
		})
	}
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
