package devenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Process is a component run from bin/ as a child process, its output in a log file.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	done    chan struct{}
}

// StartProcess runs bin/<name> (or name, when it is an absolute path) with args, logging to <dir>/<logName>.log.
func StartProcess(dir, name, logName string, args ...string) (*Process, error) {
	return StartProcessEnv(dir, name, logName, nil, args...)
}

// StartProcessEnv is StartProcess with env (KEY=value) added to this process's environment.
func StartProcessEnv(dir, name, logName string, env []string, args ...string) (*Process, error) {
	path, err := Bin(name)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, logName+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill sends SIGKILL and waits.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// FreePort returns a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WithKubeconfig adds clientConnection.kubeconfig to a KubeSchedulerConfiguration document
// (the chart's config.yaml runs in-cluster; outside a cluster it needs a kubeconfig).
func WithKubeconfig(config []byte, kubeconfig string) ([]byte, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal(config, &m); err != nil {
		return nil, fmt.Errorf("parse scheduler configuration: %w", err)
	}
	cc, _ := m["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfig
	m["clientConnection"] = cc
	return yaml.Marshal(m)
}

// StartSchedulerProcess runs bin/ome-scheduler with a configuration file on a free secure
// port and waits until /healthz answers. kubeconfig is used for delegated authentication and
// authorization of the secure port (in a cluster the in-cluster config plays that part). It
// returns the process and its port.
func StartSchedulerProcess(ctx context.Context, dir, logName, configPath, kubeconfig string, extraArgs ...string) (*Process, int, error) {
	return StartSchedulerBinary(ctx, "ome-scheduler", dir, logName, configPath, kubeconfig, extraArgs...)
}

// StartSchedulerBinary is StartSchedulerProcess for another build of the scheduler: binary is
// a tool name in bin/ or an absolute path (such as the binary of a pulled image).
func StartSchedulerBinary(ctx context.Context, binary, dir, logName, configPath, kubeconfig string, extraArgs ...string) (*Process, int, error) {
	port, err := FreePort()
	if err != nil {
		return nil, 0, err
	}
	args := append([]string{"--config=" + configPath, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig}, extraArgs...)
	p, err := StartProcess(dir, binary, logName, args...)
	if err != nil {
		return nil, 0, err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving cert of a local process
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("ome-scheduler exited; see %s", p.LogPath)
		}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Kill()
		b, _ := os.ReadFile(p.LogPath)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		return nil, 0, fmt.Errorf("ome-scheduler did not become healthy: %w; last log lines:\n%s", err, strings.Join(lines, "\n"))
	}
	return p, port, nil
}

// MetricsClient returns an HTTP client that presents the identity of cfg (client certificate
// or bearer token) to the scheduler's secure port, skipping verification of its self-signed
// serving certificate.
func MetricsClient(cfg *rest.Config) (*http.Client, error) {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.Insecure = true
	c.TLSClientConfig.CAData = nil
	c.TLSClientConfig.CAFile = ""
	rt, err := rest.TransportFor(c)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: 10 * time.Second}, nil
}

// GrepFile returns the lines of a file that contain substr.
func GrepFile(path, substr string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out, nil
}
