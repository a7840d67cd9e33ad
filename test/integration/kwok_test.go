package integration

import (
	"context"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// kwok (bin/kwok with devenv's stages) on a control plane of its own, as `make demo` and the
// side-by-side scale runs use it: it makes its nodes Ready and keeps their Leases, runs bound
// pods (Running, Ready, a pod IP), leaves nodes without its annotation alone, and finishes
// graceful deletions at the deletionTimestamp, capped at devenv.DefaultMaxGrace.
func TestKwokNodeAndPodLifecycle(t *testing.T) {
	plane, err := devenv.Start(devenv.Options{Kwok: true, WithoutCRD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Stop()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(plane.Kwok.LogPath)
			t.Logf("kwok's log (last 4 KiB):\n%s", b[max(0, len(b)-4096):])
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := plane.Client
	kwokNodes(ctx, t, plane)

	ns := "kwok"
	if err := devenv.CreateNamespace(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	for name, node := range map[string]string{"run": "kwok-node", "short": "kwok-node", "long": "kwok-node", "ignored": "plain-node"} {
		p := devenv.NewPod(devenv.PodSpec{Namespace: ns, Name: name, GPUs: 0, SchedulerName: "none"})
		if name == "short" {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := devenv.BindPod(ctx, c, ns, name, node); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"run", "short", "long"} {
		waitRunning(ctx, t, plane, ns, name)
	}
	if p, err := c.CoreV1().Pods(ns).Get(ctx, "ignored", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if p.Status.Phase != v1.PodPending {
		t.Fatalf("the pod on the node without the kwok annotation is %q, want Pending (kwok must leave it alone)", p.Status.Phase)
	}

	// The pod asked for 2 s: Terminating until its deletionTimestamp, then gone. The
	// timestamp has whole seconds (rounded down), so that is 1–2 s after the request; kwok's
	// own pod-delete stage would delete it at once.
	took := deleteAndTime(ctx, t, plane, ns, "short")
	t.Logf("grace 2 s: Terminating for %s", took)
	if took < 900*time.Millisecond || took > 10*time.Second {
		t.Fatalf("pod with a 2 s grace period gone %s after its deletion, want 1–2 s (its deletionTimestamp, whole seconds)", took)
	}
	// The pod asked for the default 30 s: kwok cuts it to DefaultMaxGrace.
	took = deleteAndTime(ctx, t, plane, ns, "long")
	t.Logf("grace 30 s: Terminating for %s", took)
	if took < devenv.DefaultMaxGrace-500*time.Millisecond || took > devenv.DefaultMaxGrace+10*time.Second {
		t.Fatalf("pod with a 30 s grace period gone %s after its deletion, want about %s", took, devenv.DefaultMaxGrace)
	}
	if _, err := c.CoreV1().Pods(ns).Get(ctx, "run", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod nobody deleted: %v", err)
	}
}

// kwokNodes creates kwok-node (for kwok, 2 GPUs) and plain-node (without the annotation) and
// checks that kwok makes kwok-node Ready, keeps its allocatable and renews its Lease.
func kwokNodes(ctx context.Context, t *testing.T, plane *devenv.ControlPlane) {
	t.Helper()
	c := plane.Client
	if _, err := devenv.CreateNode(ctx, c, devenv.NodeSpec{Name: "kwok-node", GPUs: 2, Kwok: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := devenv.CreateNode(ctx, c, devenv.NodeSpec{Name: "plain-node", GPUs: 2}); err != nil {
		t.Fatal(err)
	}
	if err := devenv.WaitNodesReady(ctx, c, 30*time.Second, "kwok-node"); err != nil {
		t.Fatal(err)
	}
	node, err := c.CoreV1().Nodes().Get(ctx, "kwok-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable[devenv.GPU]; got.Value() != 2 {
		t.Fatalf("kwok changed the node's allocatable GPUs to %s, want 2", got.String())
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "kwok-node", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kwok keeps no Lease for kwok-node: %v", err)
	}
}

// waitRunning waits until kwok has made the pod Running and Ready with a pod IP.
func waitRunning(ctx context.Context, t *testing.T, plane *devenv.ControlPlane, ns, name string) {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := plane.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		if p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s not Running and Ready with a pod IP: %v; status %+v", name, err, last.Status)
	}
}

// deleteAndTime deletes a pod with its own grace period, checks that it is Terminating (still
// there, with a deletionTimestamp) right after, and returns how long it took to be gone.
func deleteAndTime(ctx context.Context, t *testing.T, plane *devenv.ControlPlane, ns, name string) time.Duration {
	t.Helper()
	start := time.Now()
	if err := plane.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := plane.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod %s right after its graceful deletion: %v, want it Terminating", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := plane.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s never gone: %v", name, err)
	}
	return time.Since(start)
}
