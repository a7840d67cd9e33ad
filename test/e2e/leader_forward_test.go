package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/internal/omecli"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// forwardNode is the node the leader's pod is bound to: its kubelet endpoint is kwok's server.
const forwardNode = "leader-forward-node"

// TestKubectlOmeFindsTheLeader: kubectl ome, given neither --scheduler-url nor a
// port-forward, reads the Lease ome/ome-scheduler of the chart-deployed scheduler, takes its
// holder's pod (the chart's pod template, named as the binary's holder identity), and
// port-forwards to the pod's https-metrics port through the API server's pods/portforward, as
// kubectl port-forward does. No kubelet runs here: bin/kwok serves the node's kubelet API, its
// PortForward for that pod and port dialling the scheduler process's secure port. The
// scheduler's certificate is self-signed: without --scheduler-insecure-skip-tls-verify the note
// says to pass it (or --scheduler-ca), with it explain reads the leader's reservations, also as
// a ServiceAccount that has only the chart's debug reader roles besides reading nodes and pods.
func TestKubectlOmeFindsTheLeader(t *testing.T) {
	s := getChartScheduler(t)
	g := getDemoGang(t)
	if g.err != nil {
		t.Fatalf("demo gang: %v", g.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder := ""
	waitFor(ctx, 30*time.Second, func(ctx context.Context) bool {
		l, err := cp.Client.CoordinationV1().Leases(releaseNS).Get(ctx, releaseName, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return holder != ""
	})
	podName, _, ok := strings.Cut(holder, "_")
	if !ok {
		t.Fatalf("Lease %s/%s holder %q: want <hostname>_<id>", releaseNS, releaseName, holder)
	}
	// The holder is the scheduler process's hostname, which becomes the pod's name here.
	if msgs := validation.IsDNS1123Subdomain(podName); len(msgs) > 0 {
		t.Fatalf("this machine's hostname %q (the Lease holder) is no valid pod name (%s): the test names the leader's pod after it", podName, msgs[0])
	}

	kwokPort := startForwardingKwok(t, podName, s.port)
	createForwardNode(t, ctx, kwokPort)
	createLeaderPod(t, ctx, podName)

	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := omecli.Run(append(args, "--kubeconfig", cp.KubeConfigPath), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		return code, out.String(), errOut.String()
	}
	explainJSON := func(extra ...string) (explain.Result, string) {
		t.Helper()
		code, out, errOut := run(append([]string{"explain", "podgroup", demoNS, "-n", demoNS, "-o", "json"}, extra...)...)
		var r explain.Result
		if code != omecli.ExitOK || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("kubectl ome explain %v: exit %d, %q, %s", extra, code, out, errOut)
		}
		return r, errOut
	}

	r, note := explainJSON()
	if r.ReservationsKnown || !strings.Contains(note, "the leader's pod "+releaseNS+"/"+podName+" serves the self-signed certificate") ||
		!strings.Contains(note, "--scheduler-insecure-skip-tls-verify") {
		t.Errorf("kubectl ome explain against the self-signed leader without flags: %+v, note %q; want reservations unknown, naming the flag", r, note)
	}
	var node string
	for _, n := range g.nodes {
		node = n
	}
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kubectl 1.35 port-forwards over WebSocket and falls back to SPDY;
	// KUBECTL_PORT_FORWARD_WEBSOCKETS=false makes it use SPDY alone.
	for _, websockets := range []string{"true", "false"} {
		t.Setenv("KUBECTL_PORT_FORWARD_WEBSOCKETS", websockets)
		r, note = explainJSON("--scheduler-insecure-skip-tls-verify")
		if !r.ReservationsKnown || r.ChosenDomain != n.Labels[r.TopologyKey] || !strings.HasPrefix(r.Reason, "the gang is placed: 2 members") {
			t.Errorf("kubectl ome explain through the port-forward (WebSocket %s): %+v, note %q; want the demo gang placed in %s, reservations known",
				websockets, r, note, n.Labels[r.TopologyKey])
		}
	}
	r, note = explainJSON("--scheduler-namespace", "nosuch")
	if r.ReservationsKnown || !strings.Contains(note, "no Lease nosuch/"+releaseName) {
		t.Errorf("kubectl ome explain --scheduler-namespace nosuch: note %q; want the missing Lease named", note)
	}
	checkDebugReaderFindsLeader(t, ctx)
}

// startForwardingKwok runs bin/kwok managing no node (so its stages act on nothing), serving the kubelet API on a free port of
// 127.0.0.1 with a PortForward of pod ome/{pod} port 10259 to the scheduler's secure port; it
// returns kwok's port once it answers.
func startForwardingKwok(t *testing.T, pod string, schedulerPort int) int {
	t.Helper()
	dir := filepath.Join(cp.Dir, "kwok-forward")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "kwok.yaml")
	// kwok refuses to start without stages: devenv's, for nodes it does not manage.
	pf := devenv.KwokStages(devenv.DefaultMaxGrace) + fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: PortForward
metadata:
  name: %s
  namespace: %s
spec:
  forwards:
  - ports: [10259]
    target:
      address: 127.0.0.1
      port: %d
`, pod, releaseNS, schedulerPort)
	if err := os.WriteFile(cfg, []byte(pf), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := devenv.StartProcessEnv(dir, "kwok", "kwok", []string{"KWOK_WORKDIR=" + filepath.Join(dir, "workdir")},
		"--kubeconfig="+cp.KubeConfigPath, "--config="+cfg, "--manage-nodes-with-annotation-selector=ome.e2e/kwok-forward=none",
		fmt.Sprintf("--server-address=127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // kwok's test certificate
	ok := waitFor(context.Background(), time.Minute, func(context.Context) bool {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ok || p.Exited() {
		t.Fatalf("kwok does not serve on 127.0.0.1:%d; last log lines:\n%s", port, logTail(p.LogPath, 20))
	}
	return port
}

// createForwardNode creates a Ready node whose kubelet endpoint is 127.0.0.1:{port} (kwok's
// server), tainted so that nothing else lands on it.
func createForwardNode(t *testing.T, ctx context.Context, port int) {
	t.Helper()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("10")}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: forwardNode, Labels: map[string]string{v1.LabelHostname: forwardNode}},
		Spec:       v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{{Key: "ome.e2e/leader-forward", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Capacity: rl, Allocatable: rl,
			Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(port)}},
			Conditions:      []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
	if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Nodes().Delete(context.Background(), forwardNode, metav1.DeleteOptions{})
	})
}

// createLeaderPod creates the chart's scheduler pod (the Deployment's pod template) as ome/{name}
// on forwardNode and waits until the fake kubelet reports it Running.
func createLeaderPod(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var dep appsv1.Deployment
	for _, o := range splitObjects(t, helmTemplate(t, readerValues()...)) {
		if o.GetKind() == "Deployment" && o.GetName() == releaseName {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep.Name == "" {
		t.Fatalf("the chart rendered no Deployment %s", releaseName)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: name, Labels: dep.Spec.Template.Labels}, Spec: dep.Spec.Template.Spec}
	pod.Spec.NodeName = forwardNode
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{Key: "ome.e2e/leader-forward", Operator: v1.TolerationOpExists})
	if _, err := cp.Client.CoreV1().Pods(releaseNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the leader's pod %s/%s: %v", releaseNS, name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cp.Client.CoreV1().Pods(releaseNS).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	running := waitFor(ctx, 30*time.Second, func(ctx context.Context) bool {
		p, err := cp.Client.CoreV1().Pods(releaseNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	if !running {
		t.Fatalf("pod %s/%s is not Running after 30s", releaseNS, name)
	}
}
