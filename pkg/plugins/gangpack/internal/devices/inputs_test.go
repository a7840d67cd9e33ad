package devices

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// fakeTracker answers the two allocated-state reads; the embedded nil interface
// panics on anything else, which FromManager must not call.
type fakeTracker struct {
	fwk.ResourceClaimTracker
	allocated sets.Set[structured.DeviceID]
	failures  int // first reads that fail, as on a concurrent modification
	calls     int
}

func (f *fakeTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	f.calls++
	if f.calls <= f.failures {
		return nil, errors.New("conflicting concurrent modification")
	}
	return f.allocated.Clone(), nil
}

func (f *fakeTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	ids, err := f.ListAllAllocatedDevices()
	if err != nil {
		return nil, err
	}
	s := allocatedState(ids.UnsortedList()...)
	return &s, nil
}

type fakeSlices []*resourceapi.ResourceSlice

func (f fakeSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) { return f, nil }

type fakeManager struct {
	tracker *fakeTracker
	slices  fakeSlices
	classes classes
}

func (m *fakeManager) ResourceClaims() fwk.ResourceClaimTracker     { return m.tracker }
func (m *fakeManager) ResourceSlices() fwk.ResourceSliceLister      { return m.slices }
func (m *fakeManager) DeviceClasses() fwk.DeviceClassLister         { return m.classes }
func (m *fakeManager) DeviceClassResolver() fwk.DeviceClassResolver { return nil }
func (m *fakeManager) withFailures(n int) *fakeManager              { m.tracker.failures = n; return m }
func newFakeManager(allocated ...structured.DeviceID) *fakeManager {
	return &fakeManager{
		tracker: &fakeTracker{allocated: sets.New(allocated...)},
		slices:  concat(nodeSlices("node-a", 4, 1), nodeSlices("node-b", 4, 1)),
		classes: stdClasses(),
	}
}

func TestFromManager(t *testing.T) {
	ctx := context.Background()
	for _, f := range []structured.Features{{}, {ConsumableCapacity: true}} {
		m := newFakeManager(devIDs(gpuDriver, "node-a", "gpu-1")...).withFailures(gatherAttempts - 1)
		in, err := FromManager(ctx, m, f, nil)
		if err != nil {
			t.Fatalf("features %+v: %v", f, err)
		}
		if n, err := Room(ctx, in, node("node-a"), claims(gpus(1)), nil, 8); n != 3 || err != nil {
			t.Errorf("features %+v: Room(node-a) = %d, %v; want 3, nil", f, n, err)
		}
		if n, err := Room(ctx, in, node("node-b"), claims(gpus(1)), nil, 8); n != 4 || err != nil {
			t.Errorf("features %+v: Room(node-b) = %d, %v; want 4, nil", f, n, err)
		}
	}
}

func TestFromManagerErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := FromManager(ctx, nil, structured.Features{}, nil); err == nil {
		t.Error("nil manager: no error")
	}
	if _, err := FromManager(ctx, newFakeManager().withFailures(gatherAttempts), structured.Features{}, nil); err == nil {
		t.Error("tracker failing every read: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := FromManager(cctx, newFakeManager(), structured.Features{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

func TestNewInputsIndexes(t *testing.T) {
	network := driverSlice("net.example.com", "fabric", "nic", 2)
	network.Spec.NodeName = nil
	network.Spec.AllNodes = ptrTrue()
	in := NewInputs(structured.Features{}, allocatedState(concat(
		devIDs(gpuDriver, "node-a", "gpu-0"), devIDs(gpuDriver, "node-b", "gpu-0", "gpu-1"))...),
		stdClasses(), concat(nodeSlices("node-a", 4, 1), []*resourceapi.ResourceSlice{network, nil}), nil)
	v := in.view("node-a")
	if len(v.slices) != 3 {
		t.Errorf("node-a sees %d slices, want its 2 and the all-nodes one", len(v.slices))
	}
	if v.allocated.Len() != 1 {
		t.Errorf("node-a view has %d allocated devices, want 1 (node-b's are not its pools)", v.allocated.Len())
	}
	if got := len(in.view("node-z").slices); got != 1 {
		t.Errorf("unknown node sees %d slices, want the all-nodes one", got)
	}
}

func TestDefaultFeatures(t *testing.T) {
	// Whatever the gates say, the allocator must accept the feature set.
	if _, err := structured.NewAllocator(context.Background(), DefaultFeatures(), allocatedState(), stdClasses(), nil, NewCELCache(DefaultFeatures())); err != nil {
		t.Fatal(err)
	}
}

func ptrTrue() *bool { b := true; return &b }
