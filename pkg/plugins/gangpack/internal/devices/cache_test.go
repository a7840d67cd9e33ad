package devices

import (
	"context"
	resourceapi "k8s.io/api/resource/v1"
	"testing"
)

// The cache answers again only while the node's devices are unchanged: an allocation in one
// of its pools, a new slice version or another limit asks the allocator again.
func TestRoomCache(t *testing.T) {
	ctx := context.Background()
	f := DefaultFeatures()
	cache, cel := NewRoomCache(), NewCELCache(f)
	n := node("n0")
	slices := nodeSlices("n0", 4, 1)
	claims := []*resourceapi.ResourceClaim{gpus(1)}
	sig := Signature(claims, nil, 8)
	in := NewInputs(f, allocatedState(), stdClasses(), slices, cel)
	if got, err := cache.Room(ctx, in, n, nil, claims, nil, 8, sig); got != 4 || err != nil {
		t.Fatalf("first Room = %d, %v; want 4", got, err)
	}
	// Another Inputs with the same devices: the cached answer.
	if got, _ := cache.Room(ctx, NewInputs(f, allocatedState(), stdClasses(), slices, cel), n, nil, claims, nil, 8, sig); got != 4 {
		t.Fatalf("cached Room = %d, want 4", got)
	}
	// Two GPUs allocated to someone else: asked again.
	busy := NewInputs(f, allocatedState(devIDs(gpuDriver, "n0", "gpu-0", "gpu-1")...), stdClasses(), slices, cel)
	if got, _ := cache.Room(ctx, busy, n, nil, claims, nil, 8, sig); got != 2 {
		t.Fatalf("Room after two allocations = %d, want 2", got)
	}
	// The driver republished with two more GPUs (a new slice version).
	grown := nodeSlices("n0", 6, 1)
	grown[0].ResourceVersion = "2"
	if got, _ := cache.Room(ctx, NewInputs(f, allocatedState(), stdClasses(), grown, cel), n, nil, claims, nil, 8, sig); got != 6 {
		t.Fatalf("Room after the slice grew = %d, want 6", got)
	}
	// Another limit is another shape.
	if got, _ := cache.Room(ctx, in, n, nil, claims, nil, 1, Signature(claims, nil, 1)); got != 1 {
		t.Fatalf("Room with limit 1 = %d, want 1", got)
	}
}
