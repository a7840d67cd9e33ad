package devices

import (
	"context"
	"fmt"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// cluster publishes n nodes with g GPUs and one channel each; every other node has
// its first two GPUs held by other claims.
func cluster(n, g int) *Inputs {
	slices := make([]*resourceapi.ResourceSlice, 0, 2*n)
	var held []structured.DeviceID
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%d", i)
		slices = append(slices, nodeSlices(name, g, 1)...)
		if i%2 == 1 {
			held = append(held, devIDs(gpuDriver, name, "gpu-0", "gpu-1")...)
		}
	}
	return NewInputs(structured.Features{}, allocatedState(held...), stdClasses(), slices, nil)
}

// BenchmarkRoom is the per-node cost of Room (one call = one node).
func BenchmarkRoom(b *testing.B) {
	for _, bc := range []struct {
		name   string
		nodes  int
		gpus   int
		per    int64
		shared bool
		probe  time.Duration
	}{
		{name: "nodes=1/gpus=4/per=1", nodes: 1, gpus: 4, per: 1},
		{name: "nodes=1/gpus=8/per=1", nodes: 1, gpus: 8, per: 1},
		{name: "nodes=1/gpus=8/per=2", nodes: 1, gpus: 8, per: 2},
		{name: "nodes=1/gpus=8/per=8", nodes: 1, gpus: 8, per: 8},
		{name: "nodes=1/gpus=8/per=1/shared-channel", nodes: 1, gpus: 8, per: 1, shared: true},
		{name: "nodes=1/gpus=8/per=1/probe=2ms", nodes: 1, gpus: 8, per: 1, probe: ProbeBudgetDefault},
		{name: "nodes=5000/gpus=8/per=1", nodes: 5000, gpus: 8, per: 1},
		{name: "nodes=5000/gpus=8/per=2", nodes: 5000, gpus: 8, per: 2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := cluster(bc.nodes, bc.gpus)
			in.ProbeBudget = bc.probe
			nodes := make([]string, bc.nodes)
			for i := range nodes {
				nodes[i] = fmt.Sprintf("node-%d", i)
			}
			var shared []*resourceapi.ResourceClaim
			if bc.shared {
				shared = claims(channelClaim())
			}
			member := claims(gpus(bc.per))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Room(ctx, in, node(nodes[i%len(nodes)]), member, shared, 16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJointFailure is what Room avoids by going greedy: one joint Allocate of
// gpus+1 one-GPU members on a node with gpus free GPUs, which fails only after
// trying every assignment.
func BenchmarkJointFailure(b *testing.B) {
	for _, g := range []int{4, 6, 7} {
		b.Run(fmt.Sprintf("gpus=%d", g), func(b *testing.B) {
			in := cluster(1, g)
			batch := make([]*resourceapi.ResourceClaim, g+1)
			for i := range batch {
				batch[i] = gpus(1)
			}
			n := node("node-0")
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if ok, _, err := in.allocate(ctx, n, in.view("node-0"), batch); ok || err != nil {
					b.Fatalf("joint allocation of %d on %d GPUs: %v, %v", g+1, g, ok, err)
				}
			}
		})
	}
}

// BenchmarkNewInputs is the once-per-cycle cost of indexing a 5,000-node cluster.
func BenchmarkNewInputs(b *testing.B) {
	in := cluster(5000, 8)
	var slices []*resourceapi.ResourceSlice
	for _, s := range in.byNode {
		slices = append(slices, s...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		NewInputs(in.Features, in.Allocated, in.Classes, slices, in.CEL)
	}
}
