// Package integration runs ome-scheduler (the real kube-scheduler app with OMEGangPack, in
// process) against a real etcd and kube-apiserver started once for the package.
package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

var cp *devenv.ControlPlane

func TestMain(m *testing.M) {
	devenv.QuietKlog()
	flag.Parse()
	var err error
	cp, err = devenv.Start(devenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: cannot start the control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	cp.Stop()
	os.Exit(code)
}

// env is one test's world: its namespace, its nodes and its scheduler.
type env struct {
	cp    *devenv.ControlPlane
	t     *testing.T
	ctx   context.Context
	ns    string
	nodes []string
	sched *devenv.Scheduler
}

var nsCleaner = regexp.MustCompile(`[^a-z0-9-]+`)

// newEnv creates a namespace for the test on the package's control plane and registers
// cleanup of everything it creates.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, cp)
}

// newEnvOn is newEnv on another control plane.
func newEnvOn(t *testing.T, plane *devenv.ControlPlane) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	name := strings.ToLower(t.Name())
	name = strings.Trim(nsCleaner.ReplaceAllString(name, "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	e := &env{cp: plane, t: t, ctx: ctx, ns: name}
	if err := devenv.CreateNamespace(ctx, plane.Client, name); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		e.stopScheduler()
		bg := context.Background()
		_ = plane.Client.CoreV1().Pods(e.ns).DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		_ = plane.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		for _, n := range e.nodes {
			_ = plane.Client.CoreV1().Nodes().Delete(bg, n, metav1.DeleteOptions{})
		}
		cancel()
	})
	return e
}

// startScheduler starts ome-scheduler with the profile (zero value = chart defaults).
func (e *env) startScheduler(p devenv.Profile) {
	e.t.Helper()
	s, err := devenv.StartScheduler(e.ctx, e.cp, p)
	if err != nil {
		e.t.Fatalf("start scheduler: %v", err)
	}
	e.sched = s
}

func (e *env) stopScheduler() {
	if e.sched != nil {
		e.sched.Stop()
		e.sched = nil
	}
}

// node creates a Ready node whose name is prefixed with the namespace (nodes are global).
func (e *env) node(s devenv.NodeSpec) string {
	e.t.Helper()
	s.Name = e.ns + "-" + s.Name
	if _, err := devenv.CreateNode(e.ctx, e.cp.Client, s); err != nil {
		e.t.Fatal(err)
	}
	e.nodes = append(e.nodes, s.Name)
	return s.Name
}

// pod creates a pod in the test namespace.
func (e *env) pod(s devenv.PodSpec) *v1.Pod {
	e.t.Helper()
	s.Namespace = e.ns
	p, err := devenv.CreatePod(e.ctx, e.cp.Client, s)
	if err != nil {
		e.t.Fatalf("create pod %s: %v", s.Name, err)
	}
	return p
}

// bound waits until the pods are bound and returns pod → node.
func (e *env) bound(timeout time.Duration, pods ...string) map[string]string {
	e.t.Helper()
	got, err := devenv.WaitForBound(e.ctx, e.cp.Client, e.ns, timeout, pods...)
	if err != nil {
		e.t.Fatalf("%v (bound so far: %v)", err, got)
	}
	return got
}

// message waits for a scheduling message containing substr for the pod.
func (e *env) message(pod, substr string, timeout time.Duration) string {
	e.t.Helper()
	m, err := devenv.WaitForMessage(e.ctx, e.cp.Client, e.ns, pod, substr, timeout)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}
