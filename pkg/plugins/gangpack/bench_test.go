package gangpack

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// BenchmarkPreFilter measures PreFilter of a gang member at 5,000 nodes (625 cliques of 8
// one-GPU... eight-GPU nodes): "unpinned" plans every node and pins (the pin is released
// after each call), "pinned" is a later member of a pinned gang (plans its domain only).
//
//	go test -run '^$' -bench BenchmarkPreFilter -benchmem ./pkg/plugins/gangpack/
func BenchmarkPreFilter(b *testing.B) {
	var nodes []*v1.Node
	for d := 0; d < 625; d++ {
		for i := 0; i < 8; i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("c%d-%d", d, i), fmt.Sprintf("c%d", d), 8))
		}
	}
	var members []*v1.Pod
	for i := 0; i < 4; i++ {
		members = append(members, gangMember(fmt.Sprintf("g-%d", i), "g", 8))
	}
	w := newWorld(b, nil, nodes, members, podGroup("g", 4))
	infos := w.nodeInfos()
	b.Run("unpinned", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
				b.Fatal(st)
			}
			w.pl.store.Release("ns/g", placement.AnyID, nil)
		}
	})
	b.Run("pinned", func(b *testing.B) {
		if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
			b.Fatal(st)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[1], infos); !st.IsSuccess() {
				b.Fatal(st)
			}
		}
	})
}
