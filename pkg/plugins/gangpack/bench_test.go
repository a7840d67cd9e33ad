package gangpack

import (
	"fmt"
	"k8s.io/utils/ptr"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
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
	w.ctx = klog.NewContext(w.ctx, klog.Background()) // production verbosity: V(4) off
	infos := w.nodeInfos()
	b.Run("unpinned", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
				b.Fatal(st)
			}
			w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
		}
	})
	// Between two calls one domain changes (a standalone pod is assumed on one of its nodes,
	// the snapshot updated in place as kube-scheduler does): the plan cache plans that domain
	// again and reuses the other 624.
	b.Run("unpinned-churn", func(b *testing.B) {
		c := inPlaceSnapshot(w, nodes)
		logger := klog.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			p := st.MakePod().Namespace(testNS).Name(fmt.Sprintf("s-%d", i)).UID(fmt.Sprintf("s-%d", i)).
				Req(map[v1.ResourceName]string{testGPU: "1"}).Node(nodes[(i*8)%len(nodes)].Name).Obj()
			if err := c.AssumePod(logger, p); err != nil {
				b.Fatal(err)
			}
			if err := c.UpdateSnapshot(logger, w.h.snapshot); err != nil {
				b.Fatal(err)
			}
			list := w.nodeInfos()
			b.StartTimer()
			if _, status := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], list); !status.IsSuccess() {
				b.Fatal(status)
			}
			w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
		}
	})
	// The heap the plan cache keeps for one gang signature at this size (reported as
	// cache-B/sig; the cache keeps up to planCacheSignatures signatures).
	b.Run("cache-memory", func(b *testing.B) {
		var before, after runtime.MemStats
		for i := 0; i < b.N; i++ {
			w.pl.planner.ResetPlanCache()
			runtime.GC()
			runtime.ReadMemStats(&before)
			if _, status := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], w.nodeInfos()); !status.IsSuccess() {
				b.Fatal(status)
			}
			w.pl.ledger.Unwind(klog.Background(), "ns/g", placement.AnyID, gang.CauseUnreserve, false)
			runtime.GC()
			runtime.ReadMemStats(&after)
		}
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "cache-B/sig")
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

// BenchmarkPreFilterLargeGang: a member of a pinned gang of 1,000 (the in-tree TAS
// large-gang shape: racks of 100 nodes, 50 racks), while the other 999 members are still
// unplaced, so each planning groups all of them by shape. The members come from the API
// (they have a resourceVersion), as in the scheduler.
func BenchmarkPreFilterLargeGang(b *testing.B) {
	var nodes []*v1.Node
	for r := 0; r < 50; r++ {
		for i := 0; i < 100; i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("r%d-%d", r, i), fmt.Sprintf("r%d", r), 40))
		}
	}
	members := make([]*v1.Pod, 1000)
	for i := range members {
		members[i] = gangMember(fmt.Sprintf("g-%04d", i), "g", 1)
		members[i].ResourceVersion = "1"
		members[i].Spec.Tolerations = []v1.Toleration{
			{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		}
	}
	w := newWorld(b, nil, nodes, members, podGroup("g", 1000))
	w.ctx = klog.NewContext(w.ctx, klog.Background()) // production verbosity: V(4) off
	infos := w.nodeInfos()
	if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[0], infos); !st.IsSuccess() {
		b.Fatal(st)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), members[1+i%999], infos); !st.IsSuccess() {
			b.Fatal(st)
		}
	}
}
