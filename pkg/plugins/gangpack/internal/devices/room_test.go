package devices

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

type roomCase struct {
	name      string
	slices    []*resourceapi.ResourceSlice // default: node-a and node-b, 4 GPUs and 1 channel each
	allocated []structured.DeviceID
	classes   classes // default: stdClasses
	node      string  // default: node-a
	claims    []*resourceapi.ResourceClaim
	shared    []*resourceapi.ResourceClaim
	limit     int // default: 8
	probe     time.Duration
	want      int
	wantErr   string // substring; "" means no error
}

func (tc roomCase) run(t *testing.T) {
	t.Helper()
	slices := tc.slices
	if slices == nil {
		slices = concat(nodeSlices("node-a", 4, 1), nodeSlices("node-b", 4, 1))
	}
	cls := tc.classes
	if cls == nil {
		cls = stdClasses()
	}
	nodeName, limit := tc.node, tc.limit
	if nodeName == "" {
		nodeName = "node-a"
	}
	if limit == 0 {
		limit = 8
	}
	in := NewInputs(structured.Features{}, allocatedState(tc.allocated...), cls, slices, nil)
	in.ProbeBudget = tc.probe
	got, err := Room(context.Background(), in, node(nodeName), tc.claims, tc.shared, limit)
	switch {
	case tc.wantErr == "" && err != nil:
		t.Fatalf("Room: unexpected error %v", err)
	case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
		t.Fatalf("Room: error %v, want one containing %q", err, tc.wantErr)
	case got != tc.want:
		t.Fatalf("Room = %d, want %d", got, tc.want)
	}
}

func TestRoom(t *testing.T) {
	// b's selector admits gpu-0 and gpu-3 only; a takes any GPU. Greedy gives the
	// first member gpu-0 for a and gpu-3 for b, leaving nothing for a second b;
	// joint allocation backtracks to a=gpu-1, b=gpu-0 / a=gpu-2, b=gpu-3.
	overlap := claim("overlap", request("a", gpuClass, 1),
		request("b", gpuClass, 1, `device.attributes["gpu.example.com"].index in [0, 3]`))
	for _, tc := range []roomCase{
		{name: "1 GPU per member", claims: claims(gpus(1)), want: 4},
		{name: "2 GPUs per member", claims: claims(gpus(2)), want: 2},
		{name: "3 GPUs per member", claims: claims(gpus(3)), want: 1},
		{name: "5 GPUs per member", claims: claims(gpus(5)), want: 0},
		{name: "limit caps room", claims: claims(gpus(1)), limit: 3, want: 3},
		{name: "1 GPU + 1 channel per member, one channel per node", claims: claims(gpus(1), channelClaim()), want: 1},
		{name: "1 GPU + 1 channel in one claim", claims: claims(claim("both", request("gpu", gpuClass, 1), request("ch", channelClass, 1))), want: 1},
		{name: "shared channel counted once", claims: claims(gpus(1)), shared: claims(channelClaim()), want: 4},
		{name: "shared channel, node without channel", claims: claims(gpus(1)), shared: claims(channelClaim()),
			slices: nodeSlices("node-a", 4, 0), want: 0},
		{name: "shared channel allocated here", claims: claims(gpus(1)), shared: claims(allocatedOn(channelClaim(), "node-a")), want: 4},
		{name: "shared channel allocated elsewhere", claims: claims(gpus(1)), shared: claims(allocatedOn(channelClaim(), "node-b")), want: 0},
		{name: "shared only, members need nothing", shared: claims(channelClaim()), limit: 5, want: 5},
		{name: "two shared channels, one on node", claims: claims(gpus(1)), shared: claims(channelClaim(), channelClaim()), want: 0},
		{name: "no claims", limit: 6, want: 6},
		{name: "claim without requests", claims: claims(claim("empty")), limit: 6, want: 6},
		{name: "devices allocated to other claims", claims: claims(gpus(1)),
			allocated: devIDs(gpuDriver, "node-a", "gpu-0", "gpu-2"), want: 2},
		{name: "other node's allocations do not count", claims: claims(gpus(1)),
			allocated: devIDs(gpuDriver, "node-b", "gpu-0", "gpu-1", "gpu-2"), want: 4},
		{name: "allocated channel blocks per-member channel", claims: claims(gpus(1), channelClaim()),
			allocated: devIDs(channelDriver, "node-a", "channel-0"), want: 0},
		{name: "node with no slices", claims: claims(gpus(1)), node: "node-c", want: 0},
		{name: "channel published for all nodes", claims: claims(gpus(1)), shared: claims(channelClaim()),
			slices: concat(nodeSlices("node-a", 4, 0), sliceList(fabricChannels(nil))), want: 4},
		{name: "channel published for other nodes", claims: claims(gpus(1)), shared: claims(channelClaim()),
			slices: concat(nodeSlices("node-a", 4, 0), sliceList(fabricChannels(onlyNode("node-b")))), want: 0},
		{name: "per-member channels from an all-nodes pool", claims: claims(gpus(1), channelClaim()),
			slices: concat(nodeSlices("node-a", 4, 0), sliceList(fabricChannels(nil))), want: 3},
		{name: "no slices at all", claims: claims(gpus(1)), slices: []*resourceapi.ResourceSlice{}, want: 0},
		{name: "overlapping selectors, greedy", claims: claims(overlap), want: 1},
		{name: "overlapping selectors, joint probe", claims: claims(overlap), probe: time.Second, want: 2},
		{name: "probe does not exceed limit", claims: claims(overlap), probe: time.Second, limit: 1, want: 1},
		{name: "probe on exact greedy result", claims: claims(gpus(1)), probe: time.Second, want: 4},
		{name: "missing class", claims: claims(claim("tpu", request("tpu", "tpu.example.com", 1))),
			wantErr: `device class "tpu.example.com" does not exist`},
		{name: "missing class in shared claim", claims: claims(gpus(1)), shared: claims(claim("tpu", request("tpu", "tpu.example.com", 1))),
			wantErr: `device class "tpu.example.com" does not exist`},
		{name: "missing class in firstAvailable", claims: claims(firstAvailable("tpu.example.com")),
			wantErr: `request acc/tpu.example.com: device class "tpu.example.com" does not exist`},
		{name: "CEL compile error is an error", claims: claims(gpus(1)),
			classes: classes{gpuClass: class(gpuClass, `device.driver ==`)}, wantErr: "CEL"},
		{name: "nil claim", claims: []*resourceapi.ResourceClaim{nil}, wantErr: "nil per-member claim"},
		{name: "allocated per-member claim", claims: claims(allocatedOn(channelClaim(), "node-a")), wantErr: "already allocated"},
		{name: "request with no kind", claims: claims(claim("odd", resourceapi.DeviceRequest{Name: "odd"})), wantErr: "neither exactly nor firstAvailable"},
	} {
		t.Run(tc.name, tc.run)
	}
}

func claims(cs ...*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim { return cs }

func firstAvailable(classes ...string) *resourceapi.ResourceClaim {
	r := resourceapi.DeviceRequest{Name: "acc"}
	for _, c := range classes {
		r.FirstAvailable = append(r.FirstAvailable, resourceapi.DeviceSubRequest{
			Name: c, DeviceClassName: c, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		})
	}
	return claim("first", r)
}

func TestRoomMissingClassIsTyped(t *testing.T) {
	in := NewInputs(structured.Features{}, allocatedState(), stdClasses(), nodeSlices("node-a", 4, 1), nil)
	_, err := Room(context.Background(), in, node("node-a"), claims(claim("tpu", request("tpu", "tpu.example.com", 1))), nil, 4)
	var mc *MissingClassError
	if !errors.Is(err, ErrMissingDeviceClass) || !errors.As(err, &mc) || mc.Class != "tpu.example.com" || mc.Request != "tpu" {
		t.Fatalf("err = %#v, want a *MissingClassError for class tpu.example.com, request tpu", err)
	}
}

func TestRoomBadInput(t *testing.T) {
	in := NewInputs(structured.Features{}, structured.AllocatedState{}, stdClasses(), nodeSlices("node-a", 4, 1), nil)
	ctx := context.Background()
	if _, err := Room(ctx, nil, node("node-a"), claims(gpus(1)), nil, 4); err == nil {
		t.Error("nil Inputs: no error")
	}
	if _, err := Room(ctx, in, nil, claims(gpus(1)), nil, 4); err == nil {
		t.Error("nil node: no error")
	}
	if n, err := Room(ctx, in, node("node-a"), claims(gpus(1)), nil, -1); n != 0 || err != nil {
		t.Errorf("negative limit: %d, %v; want 0, nil", n, err)
	}
	// A zero AllocatedState (nil sets) is usable.
	if n, err := Room(ctx, in, node("node-a"), claims(gpus(1)), nil, 8); n != 4 || err != nil {
		t.Errorf("zero AllocatedState: %d, %v; want 4, nil", n, err)
	}
	noClasses := NewInputs(structured.Features{}, structured.AllocatedState{}, nil, nil, nil)
	if _, err := Room(ctx, noClasses, node("node-a"), claims(gpus(1)), nil, 4); err == nil {
		t.Error("nil class lister: no error")
	}
	if _, err := Room(ctx, in, node("node-a"), nil, claims(nil), 4); err == nil {
		t.Error("nil shared claim: no error")
	}
}

func TestRoomCancelled(t *testing.T) {
	in := NewInputs(structured.Features{}, allocatedState(), stdClasses(), nodeSlices("node-a", 4, 1), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Room(ctx, in, node("node-a"), claims(gpus(1)), nil, 4); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestRoomDoesNotModifyInputs runs Room concurrently on one Inputs (go test -race)
// and checks the shared allocated set is untouched.
func TestRoomDoesNotModifyInputs(t *testing.T) {
	slices := concat(nodeSlices("node-a", 4, 1), nodeSlices("node-b", 4, 1))
	in := NewInputs(structured.Features{}, allocatedState(devIDs(gpuDriver, "node-a", "gpu-0")...), stdClasses(), slices, nil)
	in.ProbeBudget = time.Second
	done := make(chan int, 8)
	for i := 0; i < 8; i++ {
		n := node([]string{"node-a", "node-b"}[i%2])
		go func() {
			r, _ := Room(context.Background(), in, n, claims(gpus(1)), claims(channelClaim()), 8)
			done <- r
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	if got := in.Allocated.AllocatedDevices.Len(); got != 1 {
		t.Fatalf("Inputs.Allocated has %d devices after Room, want 1", got)
	}
	if n, _ := Room(context.Background(), in, node("node-a"), claims(gpus(1)), nil, 8); n != 3 {
		t.Fatalf("Room after concurrent calls = %d, want 3", n)
	}
}

// fabricChannels publishes three channel devices not tied to one node: for all
// nodes (sel nil) or for the nodes sel selects.
func fabricChannels(sel *v1.NodeSelector) *resourceapi.ResourceSlice {
	s := driverSlice(channelDriver, "fabric", "channel", 3)
	s.Spec.NodeName = nil
	if sel == nil {
		s.Spec.AllNodes = ptrTrue()
	} else {
		s.Spec.NodeSelector = sel
	}
	return s
}

func onlyNode(name string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{name}}},
	}}}
}

func sliceList(s ...*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice { return s }
