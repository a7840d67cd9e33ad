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

// RoomStamped reads the device view only when the node's stamp (its last device change and
// NodeInfo generation) or the holds differ from the kept answer's.
func TestRoomStamped(t *testing.T) {
	ctx := context.Background()
	f := DefaultFeatures()
	cache, cel := NewRoomCache(), NewCELCache(f)
	n := node("n0")
	slices := nodeSlices("n0", 4, 1)
	claims := []*resourceapi.ResourceClaim{gpus(1)}
	sig := Signature(claims, nil, 8)
	view := NewInputs(f, allocatedState(), stdClasses(), slices, cel)
	reads := 0
	viewSeq := uint64(100) // the change the view reflects: after every stamp below but the last
	in := func() (*Inputs, uint64) { reads++; return view, viewSeq }
	ask := func(st Stamp, holds []Hold) int {
		t.Helper()
		got, err := cache.RoomStamped(ctx, st, in, n, holds, claims, nil, 8, sig)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, step := range []struct {
		name      string
		stamp     Stamp
		holds     []Hold
		busy      []string // GPUs allocated in the view from this step on
		want      int
		wantReads int
	}{
		{"first", Stamp{Change: 1, Generation: 10}, nil, nil, 4, 1},
		{"same stamp: kept", Stamp{Change: 1, Generation: 10}, nil, nil, 4, 1},
		{"an allocation no stamp reflects: kept (the stamp is the contract)", Stamp{Change: 1, Generation: 10}, nil, []string{"gpu-0"}, 4, 1},
		{"a pod assumed there: read again", Stamp{Change: 1, Generation: 11}, nil, []string{"gpu-0"}, 3, 2},
		{"a claim event for the node: read again", Stamp{Change: 2, Generation: 11}, nil, []string{"gpu-0", "gpu-1"}, 2, 3},
		{"a hold set aside: read again", Stamp{Change: 2, Generation: 11}, []Hold{{Claims: claims, Count: 1}}, []string{"gpu-0", "gpu-1"}, 1, 4},
	} {
		if step.busy != nil {
			view = NewInputs(f, allocatedState(devIDs(gpuDriver, "n0", step.busy...)...), stdClasses(), slices, cel)
		}
		if got := ask(step.stamp, step.holds); got != step.want || reads != step.wantReads {
			t.Fatalf("%s: room %d after %d reads, want %d after %d", step.name, got, reads, step.want, step.wantReads)
		}
	}
	// A view read before the node's change (earlier in the cycle): its answer is given but
	// not kept under the newer change, so the next lookup reads a newer view.
	viewSeq = 100
	if got := ask(Stamp{Change: 101, Generation: 11}, nil); got != 2 || reads != 5 {
		t.Fatalf("stale view: room %d after %d reads, want 2 after 5", got, reads)
	}
	view, viewSeq = NewInputs(f, allocatedState(), stdClasses(), slices, cel), 101
	if got := ask(Stamp{Change: 101, Generation: 11}, nil); got != 4 || reads != 6 {
		t.Fatalf("after a stale view: room %d after %d reads, want 4 (the newer view) after 6", got, reads)
	}
	// A view that cannot be read is an error, not room.
	if _, err := cache.RoomStamped(ctx, Stamp{Change: 3}, func() (*Inputs, uint64) { return nil, 0 }, n, nil, claims, nil, 8, sig); err == nil {
		t.Fatal("RoomStamped without a view: no error")
	}
}

// Last tells a node's last device change only while every slice is one node's.
func TestChangesLast(t *testing.T) {
	c := NewChanges()
	c.Slice(nil, nodeSlice("n1-gpu", "n1", "p1"))
	c.Slice(nil, nodeSlice("n2-gpu", "n2", "p2"))
	l1, ok1 := c.Last("n1")
	c.Claim(allocatedClaim(), allocatedClaim("p2"))
	if l, ok := c.Last("n1"); !ok1 || !ok || l != l1 {
		t.Fatalf("n1's last change moved with n2's claim: %d → %d (ok %v %v)", l1, l, ok1, ok)
	}
	if l2, ok := c.Last("n2"); !ok || l2 <= l1 {
		t.Fatalf("n2's last change %d (ok %v), want after %d", l2, ok, l1)
	}
	c.Slice(nil, nodeSlice("net", "", "p-net"))
	if _, ok := c.Last("n1"); ok {
		t.Fatal("Last ok with a slice for all nodes published")
	}
}
