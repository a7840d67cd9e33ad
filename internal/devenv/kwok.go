package devenv

import (
	"context"
	_ "embed" // the kwok stages
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// kwok (sigs.k8s.io/kwok, built into bin/ by `make tools`) simulates the kubelets of the
// demo's and the scale runs' nodes as one child process: it makes the nodes Ready and keeps
// their Leases, marks bound pods Running and Ready with a pod IP, and finishes graceful
// deletions (stages in kwok/stages.yaml).
const (
	// KwokNodeAnnotation marks a node kwok manages (its value is KwokNodeValue); StartKwok
	// selects nodes by it, so nodes without it are left to the fake kubelet or to nobody.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"
	// kwokPodCIDR is where kwok takes pod IPs from (its default /24 has 254 addresses, too
	// few for the scale runs).
	kwokPodCIDR = "10.128.0.0/12"
	// kwokLeaseSeconds is the node Lease duration kwok keeps (a kubelet's default is 40 s).
	kwokLeaseSeconds = 40
)

//go:embed kwok/stages.yaml
var kwokStages string

// KwokStages returns kwok's stage configuration with graceful deletions capped at maxGrace
// (0 = DefaultMaxGrace), rounded up to whole seconds.
func KwokStages(maxGrace time.Duration) string {
	if maxGrace <= 0 {
		maxGrace = DefaultMaxGrace
	}
	secs := int64((maxGrace + time.Second - 1) / time.Second)
	return strings.NewReplacer(
		"__MAX_GRACE_SECONDS__", strconv.FormatInt(secs, 10),
		"__MAX_GRACE_MILLISECONDS__", strconv.FormatInt(secs*1000, 10),
	).Replace(kwokStages)
}

// StartKwok runs bin/kwok against the API server of kubeconfig: it manages the nodes
// annotated KwokNodeAnnotation=KwokNodeValue with the stages of KwokStages(maxGrace), written
// to <dir>/kwok.yaml, and logs to <dir>/kwok.log. kwok serves no port (no --server-address,
// no --node-port), so any number of them can run side by side. It returns once kwok watches
// the nodes; nodes become Ready shortly after (WaitNodesReady).
func StartKwok(ctx context.Context, dir, kubeconfig string, maxGrace time.Duration) (*Process, error) {
	cfg := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(cfg, []byte(KwokStages(maxGrace)), 0o600); err != nil {
		return nil, err
	}
	// KWOK_WORKDIR keeps kwok from reading a ~/.kwok/kwok.yaml of the machine.
	env := []string{"KWOK_WORKDIR=" + filepath.Join(dir, "kwok-workdir")}
	p, err := StartProcessEnv(dir, "kwok", "kwok", env,
		"--kubeconfig="+kubeconfig, "--config="+cfg,
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"="+KwokNodeValue,
		"--cidr="+kwokPodCIDR, fmt.Sprintf("--node-lease-duration-seconds=%d", kwokLeaseSeconds))
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("kwok exited")
		}
		lines, err := GrepFile(p.LogPath, "Watch nodes")
		return err == nil && len(lines) > 0, nil
	})
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("kwok did not start: %w; last log lines:\n%s", err, logTail(p.LogPath, 15))
	}
	klog.FromContext(ctx).V(2).Info("kwok started", "pid", p.Cmd.Process.Pid, "log", p.LogPath)
	return p, nil
}

// logTail returns the last n lines of a file.
func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitNodesReady waits until every named node has the condition Ready=True.
func WaitNodesReady(ctx context.Context, c kubernetes.Interface, timeout time.Duration, names ...string) error {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready := map[string]bool{}
		for i := range list.Items {
			if nodeReady(&list.Items[i]) {
				ready[list.Items[i].Name] = true
			}
		}
		notReady = notReady[:0]
		for n := range want {
			if !ready[n] {
				notReady = append(notReady, n)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		count := len(notReady)
		if count > 5 {
			notReady = append(notReady[:5], "...")
		}
		return fmt.Errorf("nodes not Ready within %s (%d of %d, e.g. %v): %w", timeout, count, len(names), notReady, err)
	}
	return nil
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
