package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// exampleNode is one fake GPU node of an example's cluster: name, GPUs, and the value of the
// example's domain label ("" = the node does not carry it).
type exampleNode struct {
	name   string
	gpus   int64
	domain string
}

// exampleCase is what installing one file of charts/ome-scheduler/examples implies: the
// installed objects (Deployment replicas, whether a PodDisruptionBudget exists, the
// OMEGangPack topologyKey and allowedTopologyKeys in the ConfigMap) and a cluster whose
// nodes carry the example's domain label, with one domain (wantDomain) the only one where a
// gang of two one-GPU members fits. extraLabels are set on every node (e.g. a zone).
type exampleCase struct {
	replicas    int32
	pdb         bool
	domainKey   string
	allowedKeys []string
	extraLabels map[string]string
	nodes       []exampleNode
	wantDomain  string
}

var exampleCases = map[string]exampleCase{
	"nvl72.yaml": {
		replicas: 2, pdb: true, domainKey: devenv.CliqueKey, allowedKeys: []string{devenv.CliqueKey},
		// Clique nvl-a has two free GPUs, nvl-b one, and a node without the label two.
		nodes:      []exampleNode{{"ex-nvl-a1", 1, "nvl-a"}, {"ex-nvl-a2", 1, "nvl-a"}, {"ex-nvl-b1", 1, "nvl-b"}, {"ex-nvl-none", 2, ""}},
		wantDomain: "nvl-a",
	},
	"hgx-racks-zones.yaml": {
		replicas: 2, pdb: true, domainKey: "example.com/rack", allowedKeys: []string{"example.com/rack", devenv.ZoneKey},
		extraLabels: map[string]string{devenv.ZoneKey: "zone-1"},
		nodes:       []exampleNode{{"ex-hgx-r1a", 1, "rack-1"}, {"ex-hgx-r2a", 1, "rack-2"}, {"ex-hgx-r2b", 1, "rack-2"}},
		wantDomain:  "rack-2",
	},
	"dev-one-node.yaml": {
		replicas: 1, pdb: false, domainKey: v1.LabelHostname,
		// kubernetes.io/hostname is the node's name (devenv.CreateNode sets it).
		nodes:      []exampleNode{{"ex-dev", 2, "ex-dev"}},
		wantDomain: "ex-dev",
	},
}

// Every example values file installs with `helm install` as its header comment says, on one
// control plane of its own (the chart's crds/ installs the PodGroup CRD on the first
// install): the installed Deployment, PodDisruptionBudget and ConfigMap say what the example
// implies, and bin/ome-scheduler started from the installed ConfigMap as the chart's
// ServiceAccount becomes healthy, takes the leader Lease and places a gang of two in the one
// domain of the example's label where it fits. A PodGroup naming a key outside the example's
// allowedTopologyKeys waits with the scheduler's reason. Each release is uninstalled before
// the next example.
func TestExampleValuesInstall(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "charts", "ome-scheduler", "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for n := range exampleCases {
		want = append(want, n)
	}
	slices.Sort(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("files in charts/ome-scheduler/examples: %v, want %v (add an exampleCase for a new example)", names, want)
	}
	c, err := devenv.Start(devenv.Options{WithoutCRD: true})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(c.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newGuideShell(t, c.KubeConfigPath)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			installExample(t, ctx, c, s, name, exampleCases[name])
			t.Logf("%s: installed, checked, gang placed and uninstalled in %.1fs", name, time.Since(start).Seconds())
		})
	}
}

func installExample(t *testing.T, ctx context.Context, c *devenv.ControlPlane, s *guideShell, file string, ex exampleCase) {
	// As the example's header comment says, with the hub the chart's image references need.
	cmd := "helm install ome-scheduler charts/ome-scheduler --namespace ome --create-namespace " +
		"-f charts/ome-scheduler/examples/" + file + " --set global.hub=registry.example.com/ome"
	if out, err := s.sh(t, cmd, 2*time.Minute); err != nil || !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = s.sh(t, "helm uninstall ome-scheduler --namespace ome", time.Minute)
		}
	})
	if !waitFor(ctx, 30*time.Second, func(context.Context) bool {
		_, err := c.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1")
		return err == nil
	}) {
		t.Fatal("the PodGroup API is not served after helm install")
	}
	checkExampleObjects(t, ctx, c, ex)

	cleanupNodes := createExampleNodes(t, ctx, c, ex)
	pod := startGuideChartPod(t, ctx, c)
	if !waitFor(ctx, 60*time.Second, func(ctx context.Context) bool {
		l, err := c.Client.CoordinationV1().Leases("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	}) {
		pod.stop()
		t.Fatal("Lease ome/ome-scheduler has no holder within 60s")
	}
	placeExampleGang(t, ctx, c, ex)
	pod.stop()
	cleanupNodes()

	out, err := s.sh(t, "helm uninstall ome-scheduler --namespace ome", time.Minute)
	if err != nil || !strings.Contains(out, `release "ome-scheduler" uninstalled`) {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	if _, err := c.Client.AppsV1().Deployments("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment ome/ome-scheduler after helm uninstall: %v", err)
	}
	// The Lease is the scheduler's, not the chart's: the next example's scheduler starts
	// without waiting for it to expire.
	if err := c.Client.CoordinationV1().Leases("ome").Delete(ctx, "ome-scheduler", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// checkExampleObjects compares the installed Deployment, PodDisruptionBudget and ConfigMap
// with what the example implies.
func checkExampleObjects(t *testing.T, ctx context.Context, c *devenv.ControlPlane, ex exampleCase) {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment ome/ome-scheduler: %v", err)
	}
	if got := ptr.Deref(d.Spec.Replicas, -1); got != ex.replicas {
		t.Errorf("Deployment replicas %d, want %d", got, ex.replicas)
	}
	_, err = c.Client.PolicyV1().PodDisruptionBudgets("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
	if ex.pdb && err != nil {
		t.Errorf("PodDisruptionBudget ome/ome-scheduler: %v", err)
	}
	if !ex.pdb && !apierrors.IsNotFound(err) {
		t.Errorf("PodDisruptionBudget ome/ome-scheduler: %v; want none", err)
	}
	cm, err := c.Client.CoreV1().ConfigMaps("ome").Get(ctx, "ome-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap ome/ome-scheduler-config: %v", err)
	}
	var cfg struct {
		LeaderElection struct{ LeaderElect bool } `json:"leaderElection"`
		Profiles       []struct {
			PluginConfig []struct {
				Name string
				Args struct {
					TopologyKey         string   `json:"topologyKey"`
					AllowedTopologyKeys []string `json:"allowedTopologyKeys"`
				}
			} `json:"pluginConfig"`
		}
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("config.yaml of the installed ConfigMap: %v", err)
	}
	if !cfg.LeaderElection.LeaderElect {
		t.Error("leaderElection.leaderElect is false in the installed configuration")
	}
	found := false
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name != "OMEGangPack" {
				continue
			}
			found = true
			if pc.Args.TopologyKey != ex.domainKey {
				t.Errorf("OMEGangPack topologyKey %q, want %q", pc.Args.TopologyKey, ex.domainKey)
			}
			if !slices.Equal(pc.Args.AllowedTopologyKeys, ex.allowedKeys) {
				t.Errorf("OMEGangPack allowedTopologyKeys %v, want %v", pc.Args.AllowedTopologyKeys, ex.allowedKeys)
			}
		}
	}
	if !found {
		t.Error("no OMEGangPack pluginConfig in the installed configuration")
	}
}

// createExampleNodes creates the example's nodes and returns a function that deletes them.
func createExampleNodes(t *testing.T, ctx context.Context, c *devenv.ControlPlane, ex exampleCase) func() {
	t.Helper()
	for _, n := range ex.nodes {
		labels := map[string]string{}
		for k, v := range ex.extraLabels {
			labels[k] = v
		}
		if n.domain != "" && ex.domainKey != v1.LabelHostname {
			labels[ex.domainKey] = n.domain
		}
		if _, err := devenv.CreateNode(ctx, c.Client, devenv.NodeSpec{Name: n.name, GPUs: n.gpus, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for _, n := range ex.nodes {
			if err := c.Client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete node %s: %v", n.name, err)
			}
		}
	}
}

// placeExampleGang creates a PodGroup of two (no topology-key annotation: the example's
// topologyKey applies) and its two one-GPU members, checks that both bind to nodes of
// ex.wantDomain, and, when the example restricts the keys, that a PodGroup naming another key
// waits with the scheduler's reason. It deletes its pods and PodGroups at the end.
func placeExampleGang(t *testing.T, ctx context.Context, c *devenv.ControlPlane, ex exampleCase) {
	t.Helper()
	const ns = "example-gang"
	if err := devenv.CreateNamespace(ctx, c.Client, ns); err != nil {
		t.Fatal(err)
	}
	groups := map[string]string{"gang": ""}
	if len(ex.allowedKeys) > 0 {
		groups["other-key"] = "example.com/not-allowed"
	}
	var pods []string
	defer func() {
		for _, p := range pods {
			_ = c.Client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		for g := range groups {
			_ = c.PodGroups.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, g, metav1.DeleteOptions{})
		}
	}()
	for g, key := range groups {
		if _, err := c.PodGroups.SchedulingV1alpha1().PodGroups(ns).Create(ctx, devenv.NewPodGroup(ns, g, 2, key, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			name := fmt.Sprintf("%s-%d", g, i)
			if _, err := devenv.CreatePod(ctx, c.Client, devenv.PodSpec{Namespace: ns, Name: name, Group: g, GPUs: 1}); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, name)
		}
	}
	bound, err := devenv.WaitForBound(ctx, c.Client, ns, 30*time.Second, "gang-0", "gang-1")
	if err != nil {
		t.Fatalf("the gang of two is not bound within 30s: %v; bound %v; scheduling messages: %q", err, bound,
			devenv.FailedSchedulingMessages(ctx, c.Client, ns, "gang-0"))
	}
	for p, nodeName := range bound {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := node.Labels[ex.domainKey]; got != ex.wantDomain {
			t.Errorf("pod %s bound to %s, whose %s is %q; want %q", p, nodeName, ex.domainKey, got, ex.wantDomain)
		}
	}
	if key := groups["other-key"]; key != "" {
		want := fmt.Sprintf("PodGroup %s/other-key names topology key %s, which the scheduler does not allow", ns, key)
		if _, err := devenv.WaitForMessage(ctx, c.Client, ns, "other-key-0", want, 30*time.Second); err != nil {
			t.Errorf("PodGroup naming a key outside allowedTopologyKeys: %v", err)
		}
	}
}
