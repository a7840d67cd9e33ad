package gangpack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Forming gangs' reservations hold their members' DRA devices: another gang plans around
// them, and a pod with claims is refused a node whose devices a reservation holds.

const channelClass = "channel.example.com"

// draTracker reports allocated as the allocated devices and serves claims by namespace/name.
type draTracker struct {
	allocated sets.Set[structured.DeviceID]
	claims    map[string]*resourceapi.ResourceClaim
}

func (draTracker) List() ([]*resourceapi.ResourceClaim, error) { return nil, nil }
func (t draTracker) Get(ns, name string) (*resourceapi.ResourceClaim, error) {
	if c, ok := t.claims[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
}
func (t draTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	return t.allocated.Clone(), nil
}
func (t draTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	return &structured.AllocatedState{AllocatedDevices: t.allocated.Clone(),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}, nil
}
func (draTracker) SignalClaimPendingAllocation(types.UID, *resourceapi.ResourceClaim) error {
	return nil
}
func (draTracker) ClaimHasPendingAllocation(types.UID) bool                 { return false }
func (draTracker) RemoveClaimPendingAllocation(types.UID) bool              { return false }
func (draTracker) AssumeClaimAfterAPICall(*resourceapi.ResourceClaim) error { return nil }
func (draTracker) AssumedClaimRestore(string, string)                       {}

type draSlices []*resourceapi.ResourceSlice

func (s draSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) { return s, nil }

// draManager is the framework's shared DRA manager over fixed slices and classes, nothing
// allocated.
type draManager struct {
	slices    draSlices
	classes   devices.Classes
	allocated sets.Set[structured.DeviceID]
	claims    map[string]*resourceapi.ResourceClaim
}

func (m *draManager) ResourceClaims() fwk.ResourceClaimTracker {
	if m.allocated == nil {
		m.allocated = sets.New[structured.DeviceID]()
	}
	return draTracker{allocated: m.allocated, claims: m.claims}
}
func (m *draManager) ResourceSlices() fwk.ResourceSliceLister      { return m.slices }
func (m *draManager) DeviceClasses() fwk.DeviceClassLister         { return m.classes }
func (m *draManager) DeviceClassResolver() fwk.DeviceClassResolver { return nil }

// channelManager publishes one channel device per node.
func channelManager(nodes []*v1.Node) *draManager {
	m := &draManager{classes: devices.Classes{channelClass: devices.DriverClass(channelClass)}}
	for _, n := range nodes {
		m.slices = append(m.slices, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-channel"},
			Spec: resourceapi.ResourceSliceSpec{Driver: channelClass, NodeName: ptr.To(n.Name),
				Pool:    resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "channel-0"}}}})
	}
	return m
}

// withChannel gives p a claim from the "channel" template (one channel device).
func withChannel(p *v1.Pod) *v1.Pod {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: ptr.To("channel")}}
	return p
}

func TestReservationsHoldDevices(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8), testNode("b0", "b", 8), testNode("b1", "b", 8), testNode("b2", "b", 8)}
	g := []*v1.Pod{withChannel(gangMember("g-0", "g", 1)), withChannel(gangMember("g-1", "g", 1))}
	h := []*v1.Pod{withChannel(gangMember("h-0", "h", 1)), withChannel(gangMember("h-1", "h", 1))}
	solo := withChannel(standalone("solo"))
	w := newWorldWith(t, channelManager(nodes), nil, nodes, append(append(g, h...), solo), podGroup("g", 2), podGroup("h", 2))
	addTemplate(t, w, "channel", channelClass)

	// g: one channel per node, two members: a (two nodes) is the tightest fit.
	w.mustPin(g[0])
	if c, _ := w.pl.ledger.Commitment("ns/g"); c.Domain != "a" || c.Reserved.Members() != 2 {
		t.Fatalf("g pinned %+v, want a reserving two members", c)
	}
	// h: by GPUs a would still fit it (8 per node), but a's channels are g's: h goes to b.
	w.mustPin(h[0])
	if c, _ := w.pl.ledger.Commitment("ns/h"); c.Domain != "b" {
		t.Fatalf("h pinned %s, want b: a's channel devices are held by g's reservation", c.Domain)
	}
	// A standalone pod with a channel claim: refused a0 and a1 (held by g), not b2.
	c, _ := w.preFilter(solo)
	for _, n := range []string{"a0", "a1"} {
		ni, _ := w.h.snapshot.NodeInfos().Get(n)
		if st := w.pl.Filter(w.ctx, c.cs, solo, ni); st.IsSuccess() || !strings.Contains(st.Message(), "reserved") {
			t.Errorf("Filter(solo on %s) = %v, want refused: its channel is reserved for g", n, st)
		}
	}
	ni, _ := w.h.snapshot.NodeInfos().Get("b2")
	if st := w.pl.Filter(w.ctx, c.cs, solo, ni); !st.IsSuccess() {
		t.Errorf("Filter(solo on b2) = %v, want allowed", st)
	}
}

// BenchmarkPreFilterDRA is PreFilter of a gang of 4 whose members each take a GPU device and
// a channel (one per node) through claim templates, on 1,000 and 5,000 nodes in cliques of 8
// (each node publishing 8 GPU devices and a channel). "unpinned" plans every node and pins
// (released after each call), as between two plannings where no device changed; first-µs is
// the first planning, which asks the allocator on every node. "pinned" is a later member of
// the pinned gang (plans its domain only).
//
//	go test -run '^$' -bench BenchmarkPreFilterDRA -benchmem ./pkg/plugins/gangpack/
func BenchmarkPreFilterDRA(b *testing.B) {
	for _, size := range []int{1000, 5000} {
		w, members := draBenchWorld(b, size)
		infos := w.nodeInfos()
		b.Run(fmt.Sprintf("nodes=%d/unpinned", size), func(b *testing.B) {
			w.pl.planner.ResetPlanCache()
			w.pl.planner.ResetRoomCache()
			start := time.Now() // the first planning asks the allocator on every node
			if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
				b.Fatal(st)
			}
			w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
			first := time.Since(start)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
					b.Fatal(st)
				}
				w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
			}
			b.ReportMetric(float64(first.Microseconds()), "first-µs")
		})
		b.Run(fmt.Sprintf("nodes=%d/pinned", size), func(b *testing.B) {
			if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
				b.Fatal(st)
			}
			defer w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[1], infos); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}

// draBenchWorld is BenchmarkPreFilterDRA's cluster of size nodes and its gang's members.
func draBenchWorld(b *testing.B, size int) (*world, []*v1.Pod) {
	var nodes []*v1.Node
	for i := 0; i < size; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("c%d-%d", i/8, i%8), fmt.Sprintf("c%d", i/8), 8))
	}
	m := channelManager(nodes)
	gpuClass := "gpu.example.com"
	m.classes[gpuClass] = devices.DriverClass(gpuClass)
	for _, n := range nodes {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-gpu"},
			Spec: resourceapi.ResourceSliceSpec{Driver: gpuClass, NodeName: ptr.To(n.Name),
				Pool: resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}}}
		for d := 0; d < 8; d++ {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", d)})
		}
		m.slices = append(m.slices, s)
	}
	var members []*v1.Pod
	for i := 0; i < 4; i++ {
		p := withChannel(gangMember(fmt.Sprintf("g-%d", i), "g", 0))
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")})
		members = append(members, p)
	}
	w := newWorldWith(b, m, nil, nodes, members, podGroup("g", 4))
	w.ctx = klog.NewContext(w.ctx, klog.Background())
	addTemplate(b, w, "channel", channelClass)
	addTemplate(b, w, "gpu", gpuClass)
	return w, members
}

// addTemplate serves a ResourceClaimTemplate of one device of class from w's informer.
func addTemplate(t testing.TB, w *world, name, class string) {
	t.Helper()
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}}}
	if err := w.h.factory.Resource().V1().ResourceClaimTemplates().Informer().GetIndexer().Add(tmpl); err != nil {
		t.Fatal(err)
	}
}

// A placement group whose partners' members each take a channel (one per node) is placed
// where the group's channels are: c4's four nodes, not c2, which by GPUs alone fits best.
func TestPartnerGroupByDevices(t *testing.T) {
	nodes := append(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2)...)
	for _, n := range nodes { // 8 GPUs each: by GPUs c2 takes the whole group
		n.Status.Capacity[testGPU] = resource.MustParse("8")
		n.Status.Allocatable[testGPU] = resource.MustParse("8")
	}
	a, b := members("a", 2), members("b", 2)
	for _, p := range append(a, b...) {
		withChannel(p)
	}
	w := newWorldWith(t, channelManager(nodes), groupArgs(), nodes, append(a, b...),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	addTemplate(t, w, "channel", channelClass)
	w.mustPin(a[0])
	pa, _ := w.pl.ledger.Commitment("ns/a")
	pb, _ := w.pl.ledger.Commitment("ns/b")
	if pa.Domain != "c4" || pb.Domain != "c4" {
		t.Fatalf("pins a=%s b=%s, want both in c4: c2 has channels for two members, the group needs four", pa.Domain, pb.Domain)
	}
	for n := range pa.Reserved {
		if _, shared := pb.Reserved[n]; shared {
			t.Errorf("node %s reserved by both partners: one channel", n)
		}
	}
}

// holdChannel makes p a pod bound to node whose channel claim holds node's channel device.
func holdChannel(m *draManager, p *v1.Pod, node string) *v1.Pod {
	withChannel(p).Spec.NodeName = node
	name := p.Name + "-channel"
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "channel", ResourceClaimName: ptr.To(name)}}
	if m.allocated == nil {
		m.allocated = sets.New[structured.DeviceID]()
	}
	if m.claims == nil {
		m.claims = map[string]*resourceapi.ResourceClaim{}
	}
	m.allocated.Insert(structured.MakeDeviceID(channelClass, node, "channel-0"))
	m.claims[testNS+"/"+name] = &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "channel", Driver: channelClass, Pool: node, Device: "channel-0"}}}}}}
	return p
}

// A gang whose members take a channel each preempts for channels: the lower-priority pods
// holding a's two channels are evicted, the lower-priority pod holding GPUs only is not (its
// eviction frees no channel), and the gang is nominated there.
func TestDRAGangPreemptsForDevices(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8)}
	m := channelManager(nodes)
	held := []*v1.Pod{holdChannel(m, prio(standalone("low-0"), 0), "a0"), holdChannel(m, prio(standalone("low-1"), 0), "a1")}
	gpusOnly := placedOn(prio(standalone("gpus"), 0), "a0")
	hi := []*v1.Pod{prio(withChannel(gangMember("hi-0", "hi", 1)), 100), prio(withChannel(gangMember("hi-1", "hi", 1)), 100)}
	w := newPreemptWorldWith(t, m, testArgs(), nodes, append(append(held, gpusOnly), hi...), podGroup("hi", 2))
	addTemplate(t, w.world, "channel", channelClass)
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a0", "a1")
	if got, want := w.remaining(), []string{"gpus", "hi-0", "hi-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v: the channels' holders evicted, not the GPU pod", got, want)
	}
}

// A pod with claims parked by OMEGangPack is queued again when devices come back: a claim's
// allocation removed or an allocated claim deleted, a slice published, a class created. Pods
// without claims are not, and the plugin registers these events only when DRA is counted.
func TestDRAQueueingHints(t *testing.T) {
	withClaims, without := withChannel(gangMember("g-0", "g", 1)), gangMember("h-0", "h", 1)
	allocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "c"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	free := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "c"}}
	for _, tc := range []struct {
		name     string
		fn       fwk.QueueingHintFn
		pod      *v1.Pod
		old, new any
		want     fwk.QueueingHint
	}{
		{"claim deallocated", hintClaimFreed, withClaims, allocated, free, fwk.Queue},
		{"allocated claim deleted", hintClaimFreed, withClaims, allocated, nil, fwk.Queue},
		{"claim allocated", hintClaimFreed, withClaims, free, allocated, fwk.QueueSkip},
		{"claim deallocated, pod without claims", hintClaimFreed, without, allocated, free, fwk.QueueSkip},
		{"slice published", hintWithClaims, withClaims, nil, &resourceapi.ResourceSlice{}, fwk.Queue},
		{"slice published, pod without claims", hintWithClaims, without, nil, &resourceapi.ResourceSlice{}, fwk.QueueSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.fn(klog.Background(), tc.pod, tc.old, tc.new); got != tc.want || err != nil {
				t.Fatalf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	on := newWorldWith(t, channelManager(nil), nil, nil, nil)
	off := newWorld(t, nil, nil, nil)
	count := func(w *world) int {
		events, err := w.pl.EventsToRegister(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range events {
			switch e.Event.Resource {
			case fwk.ResourceClaim, fwk.ResourceSlice, fwk.DeviceClass:
				n++
			}
		}
		return n
	}
	if got := count(on); got != 3 {
		t.Errorf("with DRA: %d DRA events registered, want 3", got)
	}
	if got := count(off); got != 0 {
		t.Errorf("without DRA: %d DRA events registered, want 0", got)
	}
}
