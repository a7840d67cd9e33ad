package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// TestQuickstart publishes the release and installs it as a user of the published chart
// would. A CNCF distribution registry (bin/registry) serves TLS on loopback; a stand-in for
// the distroless base image is pushed to it. Then, in a directory laid out like a clone:
//   - docs/install.md section 2 as written (`make image`, `make publish HUB=… CHART_REPO=…`),
//     with PLATFORMS set to this machine's platform in the environment (building the second
//     platform only costs time) and BASE_IMAGE pointing at the stand-in;
//   - every command of docs/quickstart.md as written: Step 1 (helm install from oci://, rollout
//     status), Step 2 (the demo gang), Step 3 (its placement) and Clean up.
//
// registry.example.com and ghcr.io/moirai-internal are replaced by the registry's
// 127.0.0.1:PORT, the only change to the pages' commands and files. The cluster is a control
// plane of its own without the PodGroup CRD (the chart's crds/ installs it) with the demo's nine
// fake GPU nodes; the chart's replicas are placed by a default scheduler and run as the binary
// taken out of the pushed image, with the installed ConfigMap.
func TestQuickstart(t *testing.T) {
	inst := loadGuide(t, filepath.Join(repoRoot(t), "docs", "install.md"))
	inst.withRegistry = true
	g := loadGuide(t, filepath.Join(repoRoot(t), "docs", "quickstart.md"))
	reg := startRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c2 := startGuideCluster(t, ctx)
	if err := devenv.CreateLayout(ctx, c2.Client, devenv.DemoLayout); err != nil {
		t.Fatal(err)
	}

	s := newGuideShell(t, c2.KubeConfigPath)
	platform := "linux/" + runtime.GOARCH
	s.env = append(s.env, "SSL_CERT_FILE="+reg.caFile, "PLATFORMS="+platform)
	s.subst["ghcr.io/moirai-internal"] = reg.host
	s.subst["registry.example.com"] = reg.host
	base := reg.pushBaseImage(t, s, []string{platform})
	s.env = append(s.env, "BASE_IMAGE="+base)

	version := strings.TrimSpace(readFile(t, filepath.Join(repoRoot(t), "VERSION")))
	image := reg.host + "/ome/ome-scheduler:v" + version
	binary := checkPublished(t, inst, s, reg, image, version)

	// Step 1: install from the registry, the chart's replicas run the image's binary.
	g.write(t, s, "values.yaml")
	out := g.run(t, s, "install")
	wantIn(t, "helm install oci://", out[0], "STATUS: deployed")
	wantIn(t, "helm install oci://", out[0], "Pulled: "+reg.host+"/charts/ome-scheduler:"+version)
	checkDeploymentImage(t, ctx, c2, image)
	if _, err := c2.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1"); err != nil {
		t.Fatalf("the PodGroup API is not served after helm install (the chart's crds/): %v", err)
	}
	chartPod := startGuideChartPodBinary(t, ctx, c2, binary)
	t.Cleanup(chartPod.stop)
	out = g.run(t, s, "rollout")
	wantIn(t, "kubectl rollout status", out[0], `deployment "ome-scheduler" successfully rolled out`)

	// Step 2: the demo gang.
	out = g.run(t, s, "namespace")
	wantIn(t, "kubectl create namespace", out[0], "namespace/gang-demo created")
	g.write(t, s, "podgroup.yaml")
	out = g.run(t, s, "apply-podgroup")
	wantIn(t, "kubectl apply -f podgroup.yaml", out[0], "podgroup.scheduling.x-k8s.io/gang-demo created")
	g.write(t, s, "gang.yaml")
	out = g.run(t, s, "apply-gang")
	wantIn(t, "kubectl apply -f gang.yaml", out[0], "deployment.apps/gang-demo created")
	nodes := waitGangRunning(t, ctx, c2, chartPod)

	// Step 3: both Running on separate nodes of one clique, Scheduled by ome-scheduler.
	out = g.run(t, s, "pods")
	if n := strings.Count(out[0], "Running"); n != 2 {
		t.Errorf("kubectl get pods: %d Running, want 2:\n%s", n, out[0])
	}
	out = append(out, g.run(t, s, "nodes")...)
	out = append(out, g.run(t, s, "describe")...)
	cliques := map[string]bool{}
	for pod, node := range nodes {
		wantIn(t, "kubectl get pods", out[0], pod+" ")
		wantIn(t, "kubectl get pods", out[0], node)
		n, err := c2.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clique := n.Labels[devenv.CliqueKey]
		cliques[clique] = true
		if !lineHas(out[1], node, clique) {
			t.Errorf("kubectl get nodes -L: no line with %s and its clique %s:\n%s", node, clique, out[1])
		}
		wantIn(t, "kubectl describe pods", out[2], fmt.Sprintf("Successfully assigned gang-demo/%s to %s", pod, node))
	}
	if len(nodes) != 2 || len(cliques) != 1 {
		t.Errorf("the gang is on nodes %v in cliques %v, want two nodes of one clique", nodes, cliques)
	}
	wantIn(t, "kubectl describe pods", out[2], "ome-scheduler")

	// Clean up: the namespace goes, the release goes, the CRD stays.
	out = g.run(t, s, "delete-demo")
	wantIn(t, "kubectl delete namespace", out[0], `namespace "gang-demo" deleted`)
	out = g.run(t, s, "uninstall")
	wantIn(t, "helm uninstall", out[0], `release "ome-scheduler" uninstalled`)
	if _, err := c2.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1"); err != nil {
		t.Errorf("the PodGroup CRD did not stay after helm uninstall: %v", err)
	}
	g.checkAllRan(t)
}

// checkPublished runs install.md's `make image` and `make publish`, then checks what they left
// in the registry: the image under the reference the chart renders, for this platform, user
// 65532:65532, whose binary reports the release; and the chart, version VERSION. It returns
// the path of the binary taken out of the image.
func checkPublished(t *testing.T, inst *guide, s *guideShell, reg *localRegistry, image, version string) string {
	t.Helper()
	out := inst.run(t, s, "publish")
	if _, err := os.Stat(filepath.Join(s.dir, "bin", "image", "index.json")); err != nil {
		t.Errorf("make image left no OCI layout in bin/image: %v\n%s", err, out[0])
	}
	wantIn(t, "make publish", out[1], "Pushed: "+reg.host+"/charts/ome-scheduler:"+version)
	ref := strings.TrimSpace(readFile(t, filepath.Join(s.dir, "bin", "image-ref")))
	digest := strings.TrimSpace(shOK(t, s, "crane digest "+image))
	if !strings.HasPrefix(digest, "sha256:") || !strings.HasSuffix(ref, "@"+digest) {
		t.Errorf("crane digest %s = %q; bin/image-ref = %q, want the same digest", image, digest, ref)
	}
	var cfg struct {
		Architecture string `json:"architecture"`
		Config       struct {
			User       string   `json:"User"`
			Entrypoint []string `json:"Entrypoint"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(shOK(t, s, "crane config "+image)), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != runtime.GOARCH || cfg.Config.User != "65532:65532" || len(cfg.Config.Entrypoint) != 1 {
		t.Errorf("image config: architecture %q, user %q, entrypoint %v; want %s, 65532:65532, one binary",
			cfg.Architecture, cfg.Config.User, cfg.Config.Entrypoint, runtime.GOARCH)
	}
	dir := t.TempDir()
	entry := strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")
	shOK(t, s, fmt.Sprintf("crane export %s - | tar -x -C %s", image, dir))
	binary := filepath.Join(dir, entry)
	v, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(v), "ome-scheduler v"+version+" (Kubernetes v1.35.") {
		t.Errorf("%s --version of the pushed image: %q (%v), want ome-scheduler v%s (Kubernetes v1.35.x)", entry, v, err, version)
	}
	out = []string{shOK(t, s, "crane ls "+reg.host+"/charts/ome-scheduler")}
	wantIn(t, "crane ls charts/ome-scheduler", out[0], version)
	return binary
}

// waitGangRunning waits until both pods of the demo gang run, and returns pod → node.
func waitGangRunning(t *testing.T, ctx context.Context, c *devenv.ControlPlane, chartPod *guideChartPod) map[string]string {
	t.Helper()
	nodes := map[string]string{}
	if !waitFor(ctx, 90*time.Second, func(ctx context.Context) bool {
		pods, err := c.Client.CoreV1().Pods(demoNS).List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		clear(nodes)
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning {
				return false
			}
			nodes[p.Name] = p.Spec.NodeName
		}
		return true
	}) {
		t.Fatalf("the demo gang is not Running on two nodes within 90s; scheduler log:\n%s", logTail(chartPod.proc.LogPath, 30))
	}
	return nodes
}

// lineHas reports whether one line of text holds every one of subs.
func lineHas(text string, subs ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			return true
		}
	}
	return false
}
