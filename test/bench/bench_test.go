// Package bench runs Kubernetes' own scheduler_perf harness
// (k8s.io/kubernetes/test/integration/scheduler_perf) against two profiles in the same run:
// the stock kube-scheduler profile and the ome-scheduler chart profile with OMEGangPack.
//
// The workloads live in performance-config.yaml; see docs/benchmarks.md and the Makefile
// targets `bench` and `bench-full`. etcd must be on PATH (export PATH=$PWD/bin:$PATH).
package bench

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// TestMain parses the harness flags (-perf-scheduling-label-filter, -data-items-dir,
// -use-testing-log, logging flags) the way the in-tree scheduler_perf packages do.
func TestMain(m *testing.M) {
	enableWorkloadAPI()
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// registry is the out-of-tree plugin registry the harness adds to the in-tree plugins;
// it is what cmd/ome-scheduler registers with app.WithPlugin.
func registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{gangpack.Name: gangpack.New, gangpack.SortName: gangpack.NewSort}
}

// BenchmarkPerfScheduling runs every workload of performance-config.yaml selected by
// -perf-scheduling-label-filter (default "performance": use "bench" or "bench-full").
// The JSON data items land in -data-items-dir as
// BenchmarkPerfScheduling_benchmark_ome_<timestamp>.json.
func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "ome", registry(), perf.WithPrepareFn(observe))
}
