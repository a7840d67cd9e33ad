package sidebyside

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// schedProc is a scheduler child process and its samplers.
type schedProc struct {
	proc    *devenv.Process
	port    int
	scheme  string // https for ome-scheduler's secure port, http for the limit binder
	started time.Time
	client  *http.Client
	mu      sync.Mutex
	maxRSS  uint64 // bytes, the largest VmRSS sampled
	// maxGoroutines is the largest go_goroutines read from /metrics, sampled every second.
	maxGoroutines int
	done          chan struct{}
	stopOnce      sync.Once
}

// startScheduler starts the case's scheduler process (ome-scheduler with the case's
// configuration, or the limit binder), then waits until /healthz answers. VmRSS is sampled
// every 200 ms and go_goroutines every second from the start.
func startScheduler(ctx context.Context, cp *devenv.ControlPlane, sc scenario) (*schedProc, error) {
	port, err := devenv.FreePort()
	if err != nil {
		return nil, err
	}
	p := &schedProc{port: port, scheme: "https", done: make(chan struct{})}
	binary, args := "ome-scheduler", []string(nil)
	if sc.sched == limit {
		// Plain HTTP on loopback: the binder has no secure port.
		p.scheme, p.client = "http", &http.Client{Timeout: 10 * time.Second}
		binary = sc.limitBinary
		args = []string{"--kubeconfig=" + cp.KubeConfigPath, fmt.Sprintf("--qps=%g", sc.qps),
			fmt.Sprintf("--burst=%d", sc.burst), "--namespace=" + namespace, fmt.Sprintf("--port=%d", port)}
	} else {
		if p.client, err = devenv.MetricsClient(cp.Config); err != nil {
			return nil, err
		}
		if args, err = schedulerArgs(cp, sc, port); err != nil {
			return nil, err
		}
	}
	p.started = time.Now()
	p.proc, err = devenv.StartProcessEnv(cp.Dir, binary, "scheduler-"+sc.sched, sc.schedEnv, args...)
	if err != nil {
		return nil, err
	}
	go p.sample()
	go p.sampleGoroutines()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.proc.Exited() {
			return false, fmt.Errorf("%s exited; see %s", sc.sched, p.proc.LogPath)
		}
		_, err := p.get(ctx, "/healthz")
		return err == nil, nil
	})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("scheduler not healthy: %w", err)
	}
	return p, nil
}

// schedulerArgs writes the case's ome-scheduler configuration and returns its flags.
func schedulerArgs(cp *devenv.ControlPlane, sc scenario, port int) ([]string, error) {
	cfg, err := schedulerConfig(sc.sched, cp.KubeConfigPath, sc.qps, sc.burst, sc.failover)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cp.Dir, "scheduler-"+sc.sched+".yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, err
	}
	args := []string{"--config=" + path, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig=" + cp.KubeConfigPath, "--authorization-kubeconfig=" + cp.KubeConfigPath}
	// SBS_SCHED_ARGS: extra flags for both ome-scheduler configurations (e.g. --feature-gates=...).
	return append(args, strings.Fields(os.Getenv("SBS_SCHED_ARGS"))...), nil
}

// schedulerConfig returns the KubeSchedulerConfiguration of a case, profiling on and leader
// election off in both. ome: the chart's rendered configuration with topologyKey
// nvidia.com/gpu.clique. stock: one profile named ome-scheduler with kube-scheduler's default
// plugins. Both get the client QPS and burst given (SBS_QPS, SBS_BURST), which the limit
// binder uses too.
func schedulerConfig(sched, kubeconfig string, qps float64, burst int, leaderElect bool) ([]byte, error) {
	if sched == stock {
		return []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
enableProfiling: true
clientConnection:
  kubeconfig: %s
  qps: %g
  burst: %d
leaderElection:
  leaderElect: %v
  resourceNamespace: kube-system
  resourceName: %s
profiles:
  - schedulerName: %s
`, kubeconfig, qps, burst, leaderElect, leaseName, devenv.SchedulerName)), nil
	}
	// SBS_OME_ARGS: extra OMEGangPack args lines for ome (e.g. "bindWindowMilliseconds: 0").
	args := devenv.DefaultArgs + "\ntopologyKey: " + devenv.CliqueKey
	if extra := os.Getenv("SBS_OME_ARGS"); extra != "" {
		args += "\n" + extra
	}
	b, err := devenv.Profile{Args: args, LeaderElect: leaderElect}.RenderConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["enableProfiling"] = true
	cc, _ := m["clientConnection"].(map[string]any)
	if cc == nil {
		return nil, fmt.Errorf("the rendered configuration has no clientConnection")
	}
	cc["qps"], cc["burst"] = qps, burst
	return yaml.Marshal(m)
}

func (p *schedProc) sample() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if rss := p.status().VmRSS; rss > 0 {
			p.mu.Lock()
			p.maxRSS = max(p.maxRSS, rss)
			p.mu.Unlock()
		}
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// sampleGoroutines keeps the largest go_goroutines of the process's /metrics, read every
// second (a thread count from /proc is not a goroutine count).
func (p *schedProc) sampleGoroutines() {
	for {
		// Until the endpoint first answers, retry soon: a small backlog is bound in a second.
		next := 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if b, err := p.get(ctx, "/metrics"); err == nil {
			next = time.Second
			if n := int(gaugeValue(parseMetrics(b), "go_goroutines")); n > 0 {
				p.mu.Lock()
				p.maxGoroutines = max(p.maxGoroutines, n)
				p.mu.Unlock()
			}
		}
		cancel()
		select {
		case <-p.done:
			return
		case <-time.After(next):
		}
	}
}

func (p *schedProc) stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		p.proc.Stop(10 * time.Second)
	})
}

// get fetches a path of the scheduler's port: ome-scheduler's secure port as the control
// plane's admin, the limit binder's plain HTTP.
func (p *schedProc) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://127.0.0.1:%d%s", p.scheme, p.port, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, b)
	}
	return b, nil
}

// status reads the scheduler's /proc/<pid>/status; the zero value when unavailable.
func (p *schedProc) status() procfs.ProcStatus {
	proc, err := procfs.NewProc(p.proc.Cmd.Process.Pid)
	if err != nil {
		return procfs.ProcStatus{}
	}
	st, _ := proc.NewStatus()
	return st
}

// cpuSeconds is the scheduler's user + system CPU time from /proc/<pid>/stat; 0 when
// unavailable.
func (p *schedProc) cpuSeconds() float64 {
	proc, err := procfs.NewProc(p.proc.Cmd.Process.Pid)
	if err != nil {
		return 0
	}
	st, err := proc.Stat()
	if err != nil {
		return 0
	}
	return st.CPUTime()
}

// measure reads the process's peak RSS and CPU time, then takes a heap profile (after a GC),
// saves it as heap_<case>.pb.gz and keeps `go tool pprof -top` of its in-use space, and
// reads the live heap from go_memstats_heap_alloc_bytes.
func (p *schedProc) measure(ctx context.Context, res *result) error {
	res.hwmMiB = float64(p.status().VmHWM) / (1 << 20)
	p.mu.Lock()
	res.sampledMiB = float64(p.maxRSS) / (1 << 20)
	res.cpuSec = p.cpuSeconds()
	res.goroutinesPeak = p.maxGoroutines
	p.mu.Unlock()
	if res.heapDump && res.sched != limit {
		if err := saveHeapDumps(ctx, p.proc.Cmd.Process, res); err != nil {
			return err
		}
	}

	heap, err := p.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	res.heapPath = filepath.Join(res.out, "heap_"+res.name()+".pb.gz")
	if err := os.WriteFile(res.heapPath, heap, 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=15",
		"-sample_index=inuse_space", res.heapPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %w: %s", err, out)
	}
	res.heapTop = string(out)
	if mib, err := inuseMiB(heap); err == nil {
		res.heapMiB = mib
	}
	// The profile's total is a sampled estimate; the runtime's own figure, right after the
	// profile's GC, is exact.
	if metrics, err := p.get(ctx, "/metrics"); err == nil {
		fams := parseMetrics(metrics)
		res.heapMiB = gaugeValue(fams, "go_memstats_heap_alloc_bytes") / (1 << 20)
		res.goroutines = int(gaugeValue(fams, "go_goroutines"))
		res.goroutinesPeak = max(res.goroutinesPeak, res.goroutines)
		res.apiWrites = writeRequests(fams)
		_ = os.WriteFile(filepath.Join(res.out, "metrics_"+res.name()+".txt"), metrics, 0o644)
	}
	// What is still running once the backlog is bound (what holds memory, often).
	if g, err := p.get(ctx, "/debug/pprof/goroutine?debug=1"); err == nil {
		_ = os.WriteFile(filepath.Join(res.out, "goroutines_"+res.name()+".txt"), g, 0o644)
	}
	return nil
}

// saveHeapDumps asks a scheduler built with -tags heapdump for a heap dump (SIGUSR1; it
// writes heapdump-<pid>-1 into res.out after a GC) and keeps it, and the last peak dump, under
// the case's name.
func saveHeapDumps(ctx context.Context, proc *os.Process, res *result) error {
	if err := proc.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	prefix := filepath.Join(res.out, fmt.Sprintf("heapdump-%d-", proc.Pid))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(prefix + "1")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no heap dump %s1 (was the binary built with -tags heapdump?): %w", prefix, err)
	}
	if err := os.Rename(prefix+"1", filepath.Join(res.out, "heapdump_"+res.name())); err != nil {
		return err
	}
	if err := os.Rename(prefix+"peak", filepath.Join(res.out, "heapdump_"+res.name()+"_peak")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// inuseMiB is a heap profile's total in-use space (the sum of its inuse_space samples, the
// total `go tool pprof -top -sample_index=inuse_space` reports), in MiB.
func inuseMiB(heap []byte) (float64, error) {
	prof, err := profile.ParseData(heap)
	if err != nil {
		return 0, err
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return 0, fmt.Errorf("heap profile has no inuse_space samples")
	}
	var total int64
	for _, s := range prof.Sample {
		total += s.Value[idx]
	}
	return float64(total) / (1 << 20), nil
}
