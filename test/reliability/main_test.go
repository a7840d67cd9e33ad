// Package reliability runs ome-scheduler as real processes (the built binary) against a real
// etcd and kube-apiserver and injects faults: leader failover by SIGKILL (once, and at random
// points of gang bursts), restarts during Permit waits, API server restarts, node failures
// with replacements, and chaos during gang formation. Every scenario checks
// the invariants of devenv.Violations: each gang in one domain, no node double-booked, no
// gang left partially bound past its timeout.
package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const domainKey = "topology.ome.io/domain"

// world is one scenario's control plane, namespace and scheduler processes.
type world struct {
	t   *testing.T
	ctx context.Context
	cp  *devenv.ControlPlane
	ns  string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cp, err := devenv.Start(devenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	w := &world{t: t, ctx: t.Context(), cp: cp, ns: "rel"}
	if err := devenv.CreateNamespace(w.ctx, cp.Client, w.ns); err != nil {
		t.Fatal(err)
	}
	if err := devenv.CreateNamespace(w.ctx, cp.Client, "ome"); err != nil {
		t.Fatal(err)
	}
	return w
}

// scheduler starts one bin/ome-scheduler replica with the profile; the process is killed at
// cleanup, and its log printed if the test failed (the whole log is kept in $OME_KEEP_LOGS
// when set).
func (w *world) scheduler(name string, p devenv.Profile) *devenv.Process {
	w.t.Helper()
	return w.schedulerVia(name, p, w.cp.KubeConfigPath)
}

// schedulerVia is scheduler with another kubeconfig (for example through a Proxy).
func (w *world) schedulerVia(name string, p devenv.Profile, kubeconfig string) *devenv.Process {
	w.t.Helper()
	cfg := filepath.Join(w.cp.Dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(p.Render(kubeconfig)), 0o600); err != nil {
		w.t.Fatal(err)
	}
	proc, _, err := devenv.StartSchedulerProcess(w.ctx, w.cp.Dir, name, cfg, kubeconfig, "--v=4")
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		proc.Kill()
		if w.t.Failed() {
			b, _ := os.ReadFile(proc.LogPath)
			if dir := os.Getenv("OME_KEEP_LOGS"); dir != "" {
				kept := filepath.Join(dir, filepath.Base(proc.LogPath))
				if err := os.WriteFile(kept, b, 0o644); err == nil {
					w.t.Logf("full log kept in %s", kept)
				}
			}
			lines := strings.Split(string(b), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			w.t.Logf("last lines of %s:\n%s", proc.LogPath, strings.Join(lines, "\n"))
		}
	})
	return proc
}

// domains creates n domains of per one-GPU nodes each.
func (w *world) domains(n, per int) {
	w.t.Helper()
	for d := 0; d < n; d++ {
		for i := 0; i < per; i++ {
			if _, err := devenv.CreateNode(w.ctx, w.cp.Client, devenv.NodeSpec{Name: fmt.Sprintf("d%02d-%d", d, i), GPUs: 1,
				Labels: map[string]string{domainKey: fmt.Sprintf("d%02d", d)}}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// gang creates a PodGroup and its members (required anti-affinity, 1 GPU each).
func (w *world) gang(name string, size int, timeout int32) []string {
	w.t.Helper()
	if _, err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).Create(w.ctx, devenv.NewPodGroup(w.ns, name, int32(size), domainKey, timeout), metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	var pods []string
	for i := 0; i < size; i++ {
		p := fmt.Sprintf("%s-%d", name, i)
		if _, err := devenv.CreatePod(w.ctx, w.cp.Client, devenv.PodSpec{Namespace: w.ns, Name: p, Group: name, GPUs: 1, Apart: true}); err != nil {
			w.t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return pods
}

// invariants fails the test on any violation.
func (w *world) invariants(partialGrace time.Duration) {
	w.t.Helper()
	v, err := devenv.Violations(w.ctx, w.cp.Client, w.cp.PodGroups, domainKey, partialGrace, w.ns)
	if err != nil {
		w.t.Fatalf("check invariants: %v", err)
	}
	if len(v) > 0 {
		w.t.Fatalf("invariant violations:\n%s", strings.Join(v, "\n"))
	}
}

// boundCount returns how many pods of the namespace are bound.
func (w *world) boundCount() int {
	list, err := w.cp.Client.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitBound waits until want pods are bound, checking invariants every second.
func (w *world) waitBound(want int, timeout time.Duration, partialGrace time.Duration) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		w.invariants(partialGrace)
		return w.boundCount() >= want, nil
	})
	if err != nil {
		w.t.Fatalf("%d of %d pods bound within %s", w.boundCount(), want, timeout)
	}
	w.invariants(partialGrace)
}

// leader returns which of the processes holds the Lease, from their logs.
func leader(procs ...*devenv.Process) *devenv.Process {
	for _, p := range procs {
		b, _ := os.ReadFile(p.LogPath)
		if strings.Contains(strings.ToLower(string(b)), "successfully acquired lease") && !p.Exited() {
			return p
		}
	}
	return nil
}
