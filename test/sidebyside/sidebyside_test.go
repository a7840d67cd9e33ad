// Package sidebyside measures bin/ome-scheduler against the same binary configured as a stock
// kube-scheduler and against "limit" (test/sidebyside/limitbinder: no filtering or scoring,
// a placement computed up front, then one bind per pod as fast as the client allows), each as
// a separate process on a control plane of its own (real etcd and kube-apiserver child
// processes): the whole backlog of GPU pods exists before the scheduler starts, and the test
// reports the time until every pod is bound, pods/s and its share of limit's, CPU time, the
// process's peak RSS (VmHWM), the largest go_goroutines sampled every second, the API write
// requests per pod (rest_client_requests_total, POST+PATCH+PUT) and a heap profile taken at
// the end. stock and limit ignore gangs, so each runs once per run on the first gang size's
// backlog; ome runs once per gang size.
//
// It runs only with OME_SIDEBYSIDE=1 (`make sidebyside`), never in `make test`. Parameters
// come from the environment: SBS_NODES (512), SBS_GPUS_PER_NODE (1), SBS_CLIQUE (nodes per
// nvidia.com/gpu.clique, 8), SBS_GANG (comma-separated gang sizes, "4,8"), SBS_FILL (fraction
// of the GPUs the backlog requests, 1.0), SBS_RUNS (1), SBS_KWOK (1: bin/kwok, a process of
// its own, makes the nodes Ready and marks bound pods Running; 0: nothing does, the nodes are
// created Ready and pods stay Pending after their bind; SBS_KUBELET is the old name),
// SBS_QPS (client QPS of all three, 1000), SBS_BURST (2×SBS_QPS), SBS_SCHEDS (which to run,
// "stock,ome,limit"), SBS_OME_ARGS (extra OMEGangPack argument lines for ome), SBS_SCHED_ARGS
// (extra flags for stock and ome), SBS_TIMEOUT (per case, 20m), SBS_OUT (results, heap
// profiles and scheduler logs; default <bin>/sidebyside), SBS_MEMPROFILERATE (unset: Go's
// default of one heap sample per 512 KiB allocated, too coarse to attribute a 20 MiB heap;
// e.g. 4096 passes GODEBUG=memprofilerate=4096 to the schedulers, and only to them, for a
// detailed heap profile at some CPU cost) and SBS_HEAPDUMP (1: the scheduler binary was built
// with -tags heapdump; each stock and ome case also saves heapdump_<case>, a heap dump after a
// GC once every pod is bound, and heapdump_<case>_peak, the dump taken when the RSS last grew
// 8 MiB; read them with test/heapdump). SBS_FAILOVER=1 and SBS_FORMING_EVERY measure a
// leader change instead (failover_test.go). The limit binder is built once per test process into
// SBS_OUT/limitbinder.
package sidebyside

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The schedulers compared.
const (
	stock = "stock"
	ome   = "ome"
	limit = "limit"
)

// params are the test's parameters, from the environment.
type params struct {
	nodes, gpusPerNode, clique int
	gangs                      []int
	fill                       float64
	runs                       int
	kwok                       bool
	timeout                    time.Duration
	out                        string
	// schedEnv is added to the schedulers' environment only: the control plane's Go
	// processes must not sample every allocation too.
	schedEnv []string
	heapDump bool
	// qps and burst are the client rate limit of every scheduler.
	qps   float64
	burst int
	// scheds are the schedulers to run (SBS_SCHEDS).
	scheds []string
	// limitBinary is the limit binder built for this test process.
	limitBinary string
	// failover (SBS_FAILOVER=1) measures a leader change (failover_test.go); formingEvery
	// (SBS_FORMING_EVERY) makes every n-th gang forming at the change.
	failover     bool
	formingEvery int
}

// scenario is one measured case: a gang size, a scheduler, a run.
type scenario struct {
	params
	gang  int
	sched string
	run   int
}

func (s scenario) name() string {
	return fmt.Sprintf("gang%d_%s_run%d", s.gang, s.sched, s.run)
}

// pods is the size of the backlog: whole gangs filling the requested fraction of the GPUs.
func (s scenario) pods() int {
	gpus := float64(s.nodes*s.gpusPerNode) * s.fill
	return int(gpus) / s.gang * s.gang
}

func TestSideBySide(t *testing.T) {
	if os.Getenv("OME_SIDEBYSIDE") != "1" {
		t.Skip("set OME_SIDEBYSIDE=1 (make sidebyside) to run the side-by-side benchmark")
	}
	devenv.QuietKlog()
	ctrllog.SetLogger(klog.NewKlogr())
	p, err := readParams()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(p.schedEnv) > 0 {
		t.Logf("schedulers run with %v", p.schedEnv)
	}
	if slices.Contains(p.scheds, limit) {
		if p.limitBinary, err = buildLimitBinder(p.out); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("side by side: %d nodes × %d GPU, cliques of %d nodes, gangs %v, fill %.2f, %d run(s), kwok %v, "+
		"client QPS %g burst %d, schedulers %v, output %s",
		p.nodes, p.gpusPerNode, p.clique, p.gangs, p.fill, p.runs, p.kwok, p.qps, p.burst, p.scheds, p.out)
	var results []result
	for run := 1; run <= p.runs; run++ {
		for _, sc := range p.cases(run) {
			r, err := runScenario(t, sc)
			if err != nil {
				t.Fatalf("%s: %v", sc.name(), err)
			}
			t.Logf("%s: %s", sc.name(), r.summary())
			results = append(results, r)
		}
	}
	table := resultsTable(p, results)
	t.Logf("results:\n%s", table)
	if err := os.WriteFile(filepath.Join(p.out, "results.md"), []byte(table), 0o644); err != nil {
		t.Error(err)
	}
}

// cases are one run's cases, in SBS_SCHEDS order: stock and limit ignore the gang label and
// bind the same backlog for every gang size, so they run once, on the first gang size's
// backlog; ome runs once per gang size.
func (p params) cases(run int) []scenario {
	var out []scenario
	for _, sched := range p.scheds {
		gangs := p.gangs[:1]
		if sched == ome {
			gangs = p.gangs
		}
		for _, g := range gangs {
			out = append(out, scenario{params: p, gang: g, sched: sched, run: run})
		}
	}
	return out
}

// buildLimitBinder builds test/sidebyside/limitbinder into dir and returns its absolute path.
func buildLimitBinder(dir string) (string, error) {
	root, err := devenv.RepoRoot()
	if err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, "limitbinder"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", path, "./test/sidebyside/limitbinder")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build limitbinder: %w: %s", err, out)
	}
	return path, nil
}

func readParams() (params, error) {
	p := params{kwok: true}
	var err error
	ints := []struct {
		name string
		def  int
		dst  *int
	}{
		{"SBS_NODES", 512, &p.nodes}, {"SBS_GPUS_PER_NODE", 1, &p.gpusPerNode},
		{"SBS_CLIQUE", 8, &p.clique}, {"SBS_RUNS", 1, &p.runs},
	}
	for _, v := range ints {
		if *v.dst, err = envInt(v.name, v.def); err != nil {
			return p, err
		}
		if *v.dst < 1 {
			return p, fmt.Errorf("%s must be at least 1", v.name)
		}
	}
	if p.gangs, err = envInts("SBS_GANG", "4,8"); err != nil {
		return p, err
	}
	for _, g := range p.gangs {
		if g < 1 || g > p.clique*p.gpusPerNode {
			return p, fmt.Errorf("SBS_GANG: a gang of %d does not fit a clique of %d GPUs", g, p.clique*p.gpusPerNode)
		}
	}
	if p.fill, err = strconv.ParseFloat(envOr("SBS_FILL", "1.0"), 64); err != nil || p.fill <= 0 || p.fill > 1 {
		return p, fmt.Errorf("SBS_FILL must be in (0, 1]: %q", os.Getenv("SBS_FILL"))
	}
	p.kwok = envOr("SBS_KWOK", envOr("SBS_KUBELET", "1")) != "0"
	if err := p.readClient(); err != nil {
		return p, err
	}
	if p.timeout, err = time.ParseDuration(envOr("SBS_TIMEOUT", "20m")); err != nil {
		return p, fmt.Errorf("SBS_TIMEOUT: %w", err)
	}
	if p.out = os.Getenv("SBS_OUT"); p.out == "" {
		bin, err := devenv.BinDir()
		if err != nil {
			return p, err
		}
		p.out = filepath.Join(bin, "sidebyside")
	}
	if rate := os.Getenv("SBS_MEMPROFILERATE"); rate != "" {
		if n, err := strconv.Atoi(rate); err != nil || n <= 0 {
			return p, fmt.Errorf("SBS_MEMPROFILERATE must be a positive integer: %q", rate)
		}
		p.schedEnv = append(p.schedEnv, "GODEBUG="+strings.TrimPrefix(os.Getenv("GODEBUG")+",memprofilerate="+rate, ","))
	}
	if err := p.readFailover(); err != nil {
		return p, err
	}
	if p.heapDump = os.Getenv("SBS_HEAPDUMP") == "1"; p.heapDump {
		abs, err := filepath.Abs(p.out)
		if err != nil {
			return p, err
		}
		p.schedEnv = append(p.schedEnv, "OME_HEAPDUMP_DIR="+abs, "OME_HEAPDUMP_PEAK=1")
	}
	return p, nil
}

// readClient reads SBS_QPS, SBS_BURST and SBS_SCHEDS.
func (p *params) readClient() error {
	var err error
	if p.qps, err = strconv.ParseFloat(envOr("SBS_QPS", "1000"), 64); err != nil || p.qps <= 0 {
		return fmt.Errorf("SBS_QPS must be a positive number: %q", os.Getenv("SBS_QPS"))
	}
	if p.burst, err = envInt("SBS_BURST", int(2*p.qps)); err != nil || p.burst < 1 {
		return fmt.Errorf("SBS_BURST must be a positive integer: %q", os.Getenv("SBS_BURST"))
	}
	p.scheds = nil
	for _, s := range strings.Split(envOr("SBS_SCHEDS", "stock,ome,limit"), ",") {
		s = strings.TrimSpace(s)
		if s != stock && s != ome && s != limit {
			return fmt.Errorf("SBS_SCHEDS: unknown scheduler %q (stock, ome, limit)", s)
		}
		if !slices.Contains(p.scheds, s) {
			p.scheds = append(p.scheds, s)
		}
	}
	return nil
}

// readFailover reads SBS_FAILOVER and SBS_FORMING_EVERY. Failover mode runs the two
// ome-scheduler configurations only (limit has no leader election), and a forming gang's
// nominated nodes must be in one clique, so a clique's GPUs must be a multiple of each gang size.
func (p *params) readFailover() error {
	if p.failover = os.Getenv("SBS_FAILOVER") == "1"; !p.failover {
		return nil
	}
	var err error
	if p.formingEvery, err = envInt("SBS_FORMING_EVERY", 4); err != nil || p.formingEvery < 0 {
		return fmt.Errorf("SBS_FORMING_EVERY must be a non-negative integer (0: no gang forming): %q", os.Getenv("SBS_FORMING_EVERY"))
	}
	for _, g := range p.gangs {
		if (p.clique*p.gpusPerNode)%g != 0 {
			return fmt.Errorf("SBS_FAILOVER: a clique of %d GPUs is not a multiple of the gang size %d", p.clique*p.gpusPerNode, g)
		}
	}
	p.scheds = slices.DeleteFunc(p.scheds, func(s string) bool { return s == limit })
	return nil
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) (int, error) {
	n, err := strconv.Atoi(envOr(name, strconv.Itoa(def)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func envInts(name, def string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(envOr(name, def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, n)
	}
	return out, nil
}
