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
	"fmt"
	"os"
	"testing"
	"time"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
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
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "tas", nil, perf.WithPodsSchedulingTimeout(20*time.Minute))
}
