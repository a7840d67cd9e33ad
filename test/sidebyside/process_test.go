package sidebyside

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/test/procstat"
)

// schedProc is a scheduler child process and its RSS sampler.
type schedProc struct {
	proc     *devenv.Process
	port     int
	started  time.Time
	client   *http.Client
	mu       sync.Mutex
	maxRSS   int64 // KiB, the largest VmRSS sampled
	done     chan struct{}
	stopOnce sync.Once
}

// startScheduler writes the case's configuration and runs bin/ome-scheduler with it, then
// waits until its secure port answers /healthz. VmRSS is sampled every 200 ms from the start.
func startScheduler(ctx context.Context, cp *devenv.ControlPlane, sc scenario) (*schedProc, error) {
	cfg, err := schedulerConfig(sc.sched, cp.KubeConfigPath)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cp.Dir, "scheduler-"+sc.sched+".yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, err
	}
	port, err := devenv.FreePort()
	if err != nil {
		return nil, err
	}
	client, err := devenv.MetricsClient(cp.Config)
	if err != nil {
		return nil, err
	}
	p := &schedProc{port: port, client: client, done: make(chan struct{}), started: time.Now()}
	args := []string{"--config=" + path, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig=" + cp.KubeConfigPath, "--authorization-kubeconfig=" + cp.KubeConfigPath}
	// SBS_SCHED_ARGS: extra flags for both schedulers (e.g. --feature-gates=...).
	args = append(args, strings.Fields(os.Getenv("SBS_SCHED_ARGS"))...)
	p.proc, err = devenv.StartProcessEnv(cp.Dir, "ome-scheduler", "scheduler-"+sc.sched, sc.schedEnv, args...)
	if err != nil {
		return nil, err
	}
	go p.sample()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.proc.Exited() {
			return false, fmt.Errorf("ome-scheduler exited; see %s", p.proc.LogPath)
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

// schedulerConfig returns the KubeSchedulerConfiguration of a case, profiling on and leader
// election off in both. ome: the chart's rendered configuration with topologyKey
// nvidia.com/gpu.clique. stock: one profile named ome-scheduler with kube-scheduler's default
// plugins, and the same client QPS and burst as the rendered one.
func schedulerConfig(sched, kubeconfig string) ([]byte, error) {
	if sched == stock {
		return []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
enableProfiling: true
clientConnection:
  kubeconfig: %s
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: %s
`, kubeconfig, devenv.SchedulerName)), nil
	}
	b, err := devenv.Profile{Args: devenv.DefaultArgs + "\ntopologyKey: " + devenv.CliqueKey}.RenderConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["enableProfiling"] = true
	return yaml.Marshal(m)
}

func (p *schedProc) sample() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if kib := procstat.StatusKiB(p.proc.Cmd.Process.Pid, "VmRSS"); kib > 0 {
			p.mu.Lock()
			p.maxRSS = max(p.maxRSS, kib)
			p.mu.Unlock()
		}
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

func (p *schedProc) stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		p.proc.Stop(10 * time.Second)
	})
}

// get fetches a path of the scheduler's secure port as the control plane's admin.
func (p *schedProc) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", p.port, path), nil)
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

// measure reads the process's peak RSS and CPU time, then takes a heap profile (after a GC),
// saves it as heap_<case>.pb.gz and keeps `go tool pprof -top` of its in-use space, and
// reads the live heap from go_memstats_heap_alloc_bytes.
func (p *schedProc) measure(ctx context.Context, res *result) error {
	pid := p.proc.Cmd.Process.Pid
	res.hwmMiB = float64(procstat.StatusKiB(pid, "VmHWM")) / 1024
	p.mu.Lock()
	res.sampledMiB = float64(p.maxRSS) / 1024
	p.mu.Unlock()
	res.cpuSec = cpuSeconds(pid)
	if res.heapDump {
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
	if m := pprofTotal.FindStringSubmatch(res.heapTop); m != nil {
		res.heapMiB = pprofMiB(m[1])
	}
	// The profile's total is a sampled estimate; the runtime's own figure, right after the
	// profile's GC, is exact.
	if metrics, err := p.get(ctx, "/metrics"); err == nil {
		res.heapMiB = metricValue(metrics, "go_memstats_heap_alloc_bytes") / (1 << 20)
		res.goroutines = int(metricValue(metrics, "go_goroutines"))
		_ = os.WriteFile(filepath.Join(res.out, "metrics_"+res.name()+".txt"), metrics, 0o644)
	}
	// What is still running once the backlog is bound (what holds memory, often).
	if g, err := p.get(ctx, "/debug/pprof/goroutine?debug=1"); err == nil {
		_ = os.WriteFile(filepath.Join(res.out, "goroutines_"+res.name()+".txt"), g, 0o644)
	}
	return nil
}

// metricValue returns the value of an unlabelled metric in a Prometheus text exposition.
func metricValue(text []byte, name string) float64 {
	for _, l := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
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

// pprofTotal finds the profile's total in pprof's "Showing nodes accounting for …" line.
var pprofTotal = regexp.MustCompile(`of ([0-9.]+[kMG]?B) total`)

func pprofMiB(s string) float64 {
	units := map[string]float64{"kB": 1.0 / 1024, "MB": 1, "GB": 1024, "B": 1.0 / (1 << 20)}
	for _, u := range []string{"kB", "MB", "GB", "B"} {
		if v, ok := strings.CutSuffix(s, u); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f * units[u]
		}
	}
	return 0
}

// cpuSeconds is the process's user + system CPU time from /proc/<pid>/stat (USER_HZ = 100).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	fs := strings.Fields(string(b)[i+1:])
	if len(fs) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(fs[11], 64)
	s, _ := strconv.ParseFloat(fs[12], 64)
	return (u + s) / 100
}
