// Package intree runs Kubernetes v1.37.2's own scheduler_perf workloads for topology-aware
// workload scheduling (KEP-5732: PodGroups with a gang policy and a topology constraint,
// feature gates GenericWorkload and TopologyAwareWorkloadScheduling), as published in
// k8s.io/kubernetes/test/integration/scheduler_perf/podgroup/tas, on this machine, beside
// OMEGangPack on the same shapes (test/bench, TAS4_B_OME). It is a module of its own so that
// Kubernetes 1.37 never enters ome-scheduler's build. `make intree` builds the test binary and
// runs it in that package's directory of the module cache, where its performance-config.yaml
// and templates are (docs/benchmarks.md).
package intree

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	m.Run()
}

// BenchmarkPerfScheduling runs the workloads of performance-config.yaml in the working
// directory (the upstream package's), with its 20-minute scheduling timeout.
func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "tas", nil, perf.WithPodsSchedulingTimeout(20*time.Minute),
		perf.WithPrepareFn(reportPlacement))
}

// rackKey is the topology key of the workloads' PodGroups and nodes.
const rackKey = "topology.kubernetes.io/rack"

// reportPlacement prints, when the workload ends (before its API server stops), how many gangs
// had every bound member in one rack: the placement quality scheduler_perf does not report.
// A gang is the pods naming one PodGroup in spec.schedulingGroup.
func reportPlacement(tCtx ktesting.TContext) error {
	tCtx.TB().Cleanup(func() {
		// The workload's context may be cancelled already; the API server is still up.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		nodes, err := tCtx.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Printf("placement: list nodes: %v\n", err)
			return
		}
		rack := map[string]string{}
		for _, n := range nodes.Items {
			rack[n.Name] = n.Labels[rackKey]
		}
		pods, err := tCtx.Client().CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Printf("placement: list pods: %v\n", err)
			return
		}
		racks := map[string]map[string]bool{} // gang → racks of its bound members
		bound := 0
		for _, p := range pods.Items {
			g := p.Spec.SchedulingGroup
			if g == nil || g.PodGroupName == nil || p.Spec.NodeName == "" {
				continue
			}
			key := p.Namespace + "/" + *g.PodGroupName
			if racks[key] == nil {
				racks[key] = map[string]bool{}
			}
			racks[key][rack[p.Spec.NodeName]] = true
			bound++
		}
		whole := 0
		for _, rs := range racks {
			if len(rs) == 1 {
				whole++
			}
		}
		fmt.Printf("placement %s: %d of %d gangs with bound members have them all in one rack (%d pods bound)\n",
			tCtx.TB().Name(), whole, len(racks), bound)
	})
	return nil
}
