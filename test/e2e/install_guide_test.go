package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// TestInstallGuide walks docs/install.md on a cluster of its own: etcd, kube-apiserver and
// kube-controller-manager (deployment, replicaset, namespace and garbage-collector
// controllers) from bin/, without the PodGroup CRD (the chart's crds/ installs it), with the
// demo's nine fake GPU nodes and the fake kubelet. Two bin/ome-scheduler processes play what a real cluster runs in pods: the
// cluster's default scheduler (profile default-scheduler, which places the chart's own pods)
// and the chart's scheduler (the installed ConfigMap's config.yaml, authenticated as the
// chart's ServiceAccount), started when the guide's release exists and stopped when its
// Deployment is deleted. Stand-in CRDs of the Prometheus Operator (ServiceMonitor,
// PrometheusRule: any object accepted) and the ServiceAccount monitoring/prometheus represent
// an installed Prometheus. Every command of the page is run as written in a directory laid out
// like a clone, except the curl, whose port is the local scheduler's; the test checks what the
// page says about each result, and that it ran every command of the page.
func TestInstallGuide(t *testing.T) {
	g := loadGuide(t, filepath.Join(repoRoot(t), "docs", "install.md"))
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	c2 := startGuideCluster(t, ctx)
	dc, err := dynamic.NewForConfig(c2.Config)
	if err != nil {
		t.Fatal(err)
	}
	var chartPod *guideChartPod
	t.Cleanup(func() { chartPod.stop() })

	s := newGuideShell(t, c2.KubeConfigPath)

	// 1. Prerequisites. The cluster "has" GPU nodes, a Prometheus and its operator's CRDs.
	if err := devenv.CreateLayout(ctx, c2.Client, devenv.DemoLayout); err != nil {
		t.Fatal(err)
	}
	installMonitoringCRDs(t, ctx, c2)
	if err := devenv.CreateNamespace(ctx, c2.Client, "monitoring"); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Client.CoreV1().ServiceAccounts("monitoring").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	out := g.run(t, s, "version")
	if !strings.Contains(out[0], "Server Version: v1.35.") {
		t.Errorf("kubectl version: no Server Version v1.35.x:\n%s", out[0])
	}
	if !strings.Contains(out[1], `Version:"v3.`) {
		t.Errorf("helm version: not Helm 3:\n%s", out[1])
	}
	podGroupsServed := func(context.Context) bool {
		_, err := c2.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1")
		return err == nil
	}
	if podGroupsServed(ctx) {
		t.Fatal("the PodGroup API is served before the chart installed its CRD")
	}
	out = g.run(t, s, "crd")
	if strings.TrimSpace(out[0]) != "" {
		t.Errorf("kubectl get crd --ignore-not-found printed %q on a cluster without the CRD", out[0])
	}
	out = g.run(t, s, "nodes")
	for _, c := range devenv.DemoLayout {
		for _, n := range c.Nodes {
			wantIn(t, "kubectl get nodes -L", out[0], n)
		}
		wantIn(t, "kubectl get nodes -L", out[0], c.Name)
	}
	wantIn(t, "kubectl get nodes -L", out[0], "GPU.CLIQUE")
	out = g.run(t, s, "monitoring-crds")
	wantIn(t, "kubectl get crd", out[0], "servicemonitors.monitoring.coreos.com")
	wantIn(t, "kubectl get crd", out[0], "prometheusrules.monitoring.coreos.com")

	// 2. The image and the chart's publication need a registry: TestQuickstart runs them.
	g.run(t, s, "publish")
	// Signed releases: run against a registry by TestRelease (release_test.go).
	g.run(t, s, "release")
	g.run(t, s, "release-verify")
	g.run(t, s, "krew")

	// 3. Install from the repository, then (after an uninstall) from the package.
	version := strings.TrimSpace(readFile(t, filepath.Join(repoRoot(t), "VERSION")))
	wantImage := "registry.example.com/ome/ome-scheduler:v" + version // the image tag is v + VERSION
	out = g.run(t, s, "install-repo")
	wantIn(t, "helm install (repository)", out[0], "STATUS: deployed")
	checkDeploymentImage(t, ctx, c2, wantImage)
	// Helm created the PodGroup CRD from the chart's crds/: the cluster had none.
	if !waitFor(ctx, 30*time.Second, podGroupsServed) {
		t.Fatal("the PodGroup API is not served after helm install: the chart's crds/ was not installed")
	}
	if o, err := s.sh(t, "helm uninstall ome-scheduler --namespace ome", time.Minute); err != nil {
		t.Fatalf("helm uninstall between the two installs: %v\n%s", err, o)
	}
	// The CRD stays, and the second install finds it and skips it.
	if !podGroupsServed(ctx) {
		t.Fatal("helm uninstall deleted the PodGroup CRD of the chart's crds/")
	}
	if !strings.Contains(g.block(t, "install-package").commands[1].text, "bin/ome-scheduler-"+version+".tgz") {
		t.Errorf("install-package does not install bin/ome-scheduler-%s.tgz (the VERSION file)", version)
	}
	out = g.run(t, s, "install-package")
	wantIn(t, "make chart", out[0], "Successfully packaged chart and saved it to: ")
	wantIn(t, "make chart", out[0], "bin/ome-scheduler-"+version+".tgz")
	wantIn(t, "helm install (package)", out[1], "STATUS: deployed")
	wantIn(t, "helm install (package)", out[1], "schedulerName: ome-scheduler") // NOTES.txt
	checkDeploymentImage(t, ctx, c2, wantImage)

	// The chart's pods are placed by the default scheduler and made Running by the fake
	// kubelet; the chart's scheduler itself runs as a local process.
	chartPod = startGuideChartPod(t, ctx, c2)
	if !waitFor(ctx, 60*time.Second, func(ctx context.Context) bool {
		l, err := c2.Client.CoordinationV1().Leases("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	}) {
		t.Fatal("Lease ome/ome-scheduler has no holder within 60s")
	}
	out = g.run(t, s, "check")
	wantIn(t, "kubectl rollout status", out[0], `deployment "ome-scheduler" successfully rolled out`)
	if n := strings.Count(out[1], "Running"); n != 2 {
		t.Errorf("kubectl get pods: %d Running replicas, want 2:\n%s", n, out[1])
	}
	if strings.TrimSpace(out[2]) == "" {
		t.Error("kubectl get lease: empty holderIdentity")
	}

	// 4. The demo gang lands in one clique, placed by ome-scheduler.
	g.run(t, s, "use", 0)
	var gangPods []string
	if !waitFor(ctx, 60*time.Second, func(ctx context.Context) bool {
		pods, err := c2.Client.CoreV1().Pods(demoNS).List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		gangPods = gangPods[:0]
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning {
				return false
			}
			gangPods = append(gangPods, p.Name)
		}
		return true
	}) {
		t.Fatalf("the demo gang is not Running on two nodes within 60s; scheduler log:\n%s", logTail(chartPod.proc.LogPath, 30))
	}
	out = g.run(t, s, "use", 1, 2)
	cliques := map[string]bool{}
	for _, p := range gangPods {
		pod, err := c2.Client.CoreV1().Pods(demoNS).Get(ctx, p, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node, err := c2.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cliques[node.Labels[devenv.CliqueKey]] = true
		wantIn(t, "kubectl get pods -o wide", out[0], pod.Spec.NodeName)
		wantIn(t, "kubectl get events", out[1], fmt.Sprintf("Successfully assigned %s/%s to %s", demoNS, p, pod.Spec.NodeName))
	}
	if len(cliques) != 1 {
		t.Errorf("the demo gang spans cliques %v, want one", cliques)
	}

	// 5. Monitoring: values file, ServiceMonitor and PrometheusRule, access check, curl.
	g.write(t, s, "my-values.yaml")
	out = g.run(t, s, "monitoring")
	wantIn(t, "helm upgrade (monitoring)", out[0], "has been upgraded")
	wantIn(t, "kubectl get servicemonitor,prometheusrule", out[1], "servicemonitor.monitoring.coreos.com/ome-scheduler")
	wantIn(t, "kubectl get servicemonitor,prometheusrule", out[1], "prometheusrule.monitoring.coreos.com/ome-scheduler")
	sm, err := dc.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}).Namespace("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v lack release: prometheus", sm.GetLabels())
	}
	smYAML, _ := yaml.Marshal(sm.Object["spec"])
	for _, w := range []string{"bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "insecureSkipVerify: true", "scheme: https", "port: https-metrics", "interval: 30s"} {
		wantIn(t, "ServiceMonitor spec", string(smYAML), w)
	}
	crb, err := c2.Client.RbacV1().ClusterRoleBindings().Get(ctx, "ome-scheduler-metrics-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the values file binds no metrics reader: %v", err)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "prometheus" || crb.Subjects[0].Namespace != "monitoring" {
		t.Errorf("metrics-reader subjects %v, want monitoring/prometheus", crb.Subjects)
	}
	checkDeploymentImage(t, ctx, c2, wantImage) // global.hub from the values file
	s.subst["https://127.0.0.1:10259/"] = fmt.Sprintf("https://127.0.0.1:%d/", chartPod.port)
	out = g.run(t, s, "metrics-access")
	if strings.TrimSpace(out[0]) != "yes" {
		t.Errorf("kubectl auth can-i get /metrics: %q, want yes", out[0])
	}
	// One gang of two: the first member waits, the second admits the gang; its committed pin
	// stays while its pods live.
	for _, w := range []string{`ome_scheduler_gang_gate_total{result="admit"} 1`, `ome_scheduler_gang_gate_total{result="wait"} 1`,
		"ome_scheduler_pinned_groups 1", `ome_scheduler_gang_pin_total{result="pinned"} 1`, `ome_scheduler_gang_placement_total{outcome="single_domain"} 1`} {
		wantIn(t, "curl /metrics | grep", out[2], w)
	}
	// What the page says about other callers: a ServiceAccount that is not listed, and no token.
	if _, err := c2.Client.CoreV1().ServiceAccounts("monitoring").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "grafana"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ who, want string }{
		{`-H "Authorization: Bearer $(kubectl -n monitoring create token grafana)"`, "403"},
		{"", "403"},
	} {
		o, err := s.sh(t, fmt.Sprintf(`curl -sk -o /dev/null -w '%%{http_code}' %s https://127.0.0.1:%d/metrics`, tc.who, chartPod.port), time.Minute)
		if err != nil || strings.TrimSpace(o) != tc.want {
			t.Errorf("curl /metrics %s: %q (%v), want %s", tc.who, o, err, tc.want)
		}
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		o, err := s.sh(t, fmt.Sprintf(`curl -sk -o /dev/null -w '%%{http_code}' https://127.0.0.1:%d%s`, chartPod.port, p), time.Minute)
		if err != nil || strings.TrimSpace(o) != "200" {
			t.Errorf("curl %s without a token: %q (%v), want 200", p, o, err)
		}
	}

	// 6. The CRD by hand (Helm never upgrades crds/), then the release from the repository
	// and from the package; nothing restarts.
	out = g.run(t, s, "crd-upgrade")
	wantIn(t, "kubectl apply -f <chart's CRD>", out[0], "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io configured")
	wantIn(t, "kubectl apply -f <chart's CRD>", out[0], "missing the kubectl.kubernetes.io/last-applied-configuration annotation")
	wantIn(t, "kubectl wait", out[1], "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io condition met")
	before := deploymentChecksum(t, ctx, c2)
	out = g.run(t, s, "upgrade")
	for i := range out {
		wantIn(t, "helm upgrade", out[i], "has been upgraded")
	}
	if after := deploymentChecksum(t, ctx, c2); after != before {
		t.Errorf("an upgrade with the same values changed checksum/config: %s -> %s", before, after)
	}

	// A release from before the instance selector label: the Deployment selects only name
	// and component. helm upgrade fails as the page says; deleting the Deployment first works.
	replaceWithOldSelector(t, ctx, c2, s)
	out = g.run(t, s, "selector-check")
	if strings.Contains(out[0], "app.kubernetes.io/instance") || !strings.Contains(out[0], "app.kubernetes.io/name") {
		t.Fatalf("selector of the old-style Deployment: %s", out[0])
	}
	failed := g.runFailing(t, s, "selector-upgrade", 1)
	wantIn(t, "helm upgrade of a release without the instance selector", failed, "spec.selector")
	wantIn(t, "helm upgrade of a release without the instance selector", failed, "field is immutable")
	g.run(t, s, "selector-upgrade", 0)
	chartPod.stop() // the replicas went with the Deployment
	waiter := createPendingPod(t, ctx, c2, "waiter")
	assertStaysPending(t, ctx, c2, "waiter", 3*time.Second)
	out = g.run(t, s, "selector-upgrade", 1)
	wantIn(t, "helm upgrade after deleting the Deployment", out[0], "has been upgraded")
	chartPod = startGuideChartPod(t, ctx, c2)
	if _, err := devenv.WaitForBound(ctx, c2.Client, demoNS, 60*time.Second, waiter); err != nil {
		t.Errorf("the pod that waited while no replica ran is not placed once the scheduler is back: %v", err)
	}
	out = g.run(t, s, "selector-check")
	wantIn(t, "selector after the upgrade", out[0], `"app.kubernetes.io/instance":"ome-scheduler"`)
	if err := c2.Client.CoreV1().Pods(demoNS).Delete(ctx, waiter, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// 7. Uninstall: find the workloads, move them to the default scheduler, uninstall.
	out = g.run(t, s, "uninstall-find")
	for _, p := range gangPods {
		wantIn(t, "kubectl get pods --field-selector spec.schedulerName", out[0], p)
	}
	if strings.TrimSpace(out[1]) != "Deployment/gang-demo/gang-demo" {
		t.Errorf("workloads naming ome-scheduler: %q, want Deployment/gang-demo/gang-demo", out[1])
	}
	g.run(t, s, "uninstall-redirect")
	if !waitFor(ctx, 90*time.Second, func(ctx context.Context) bool {
		pods, err := c2.Client.CoreV1().Pods(demoNS).List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.SchedulerName != v1.DefaultSchedulerName || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the demo Deployment did not roll out to two Running pods of the default scheduler within 90s")
	}
	out = g.run(t, s, "uninstall-find")
	if strings.Contains(out[0], "gang-demo") || strings.TrimSpace(out[1]) != "" {
		t.Errorf("pods or workloads still name ome-scheduler after the redirect:\n%s\n%s", out[0], out[1])
	}
	out = g.run(t, s, "uninstall")
	wantIn(t, "helm uninstall", out[0], `release "ome-scheduler" uninstalled`)
	chartPod.stop()
	for _, get := range []func() error{
		func() error {
			_, err := c2.Client.AppsV1().Deployments("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c2.Client.RbacV1().ClusterRoles().Get(ctx, "ome-scheduler-metrics-reader", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := dc.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}).Namespace("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("a chart object survived helm uninstall: %v", err)
		}
	}
	if _, err := c2.PodGroups.SchedulingV1alpha1().PodGroups(demoNS).Get(ctx, "gang-demo", metav1.GetOptions{}); err != nil {
		t.Errorf("PodGroup gang-demo/gang-demo gone after helm uninstall: %v", err)
	}
	createPendingPod(t, ctx, c2, "orphan")
	assertStaysPending(t, ctx, c2, "orphan", 3*time.Second)
	pods, err := c2.Client.CoreV1().Pods(demoNS).List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
	if err != nil || len(pods.Items) != 2 {
		t.Errorf("running workloads after helm uninstall: %v %v", pods, err)
	}

	out = g.run(t, s, "uninstall-rest")
	wantIn(t, "kubectl delete namespace", out[0], `namespace "ome" deleted`)
	wantIn(t, "kubectl delete -f <crd>", out[1], `customresourcedefinition.apiextensions.k8s.io "podgroups.scheduling.x-k8s.io" deleted`)
	if _, err := c2.Client.CoreV1().Namespaces().Get(ctx, "ome", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace ome still present: %v", err)
	}

	// 10. GitOps: the Argo CD and Flux files (rendered, not applied: neither tool runs here).
	checkGitOpsBlocks(t, g, s)

	g.checkAllRan(t)
}

func wantIn(t *testing.T, what, text, sub string) {
	t.Helper()
	if !strings.Contains(text, sub) {
		t.Errorf("%s: output lacks %q:\n%s", what, sub, text)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkDeploymentImage(t *testing.T, ctx context.Context, c *devenv.ControlPlane, want string) {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment ome/ome-scheduler: %v", err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("Deployment image %q, want %q", got, want)
	}
}

func deploymentChecksum(t *testing.T, ctx context.Context, c *devenv.ControlPlane) string {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations["checksum/config"]
}

// startDefaultScheduler runs bin/ome-scheduler with one profile named default-scheduler and
// nothing else configured: the stock kube-scheduler, as the cluster's default scheduler.
// startGuideCluster starts what a guide's cluster runs besides the chart: a control plane of
// its own without the PodGroup CRD (the chart's crds/ installs it), kube-controller-manager's
// deployment, replicaset, namespace and garbage-collector controllers, and a default scheduler
// for the chart's own pods. Everything stops when the test ends.
func startGuideCluster(t *testing.T, ctx context.Context) *devenv.ControlPlane {
	t.Helper()
	c, err := devenv.Start(devenv.Options{WithoutCRD: true})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(c.Stop)
	kcm, err := devenv.StartProcess(c.Dir, "kube-controller-manager", "kube-controller-manager",
		"--kubeconfig="+c.KubeConfigPath, "--controllers=deployment,replicaset,namespace,garbagecollector",
		"--leader-elect=false", "--secure-port=0", "--v=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kcm.Stop(10 * time.Second) })
	defaultSched := startDefaultScheduler(t, ctx, c)
	t.Cleanup(func() { defaultSched.Stop(10 * time.Second) })
	dumpLogOnFailure(t, defaultSched)
	return c
}

func startDefaultScheduler(t *testing.T, ctx context.Context, c *devenv.ControlPlane) *devenv.Process {
	t.Helper()
	dir := filepath.Join(c.Dir, "default-scheduler")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: %s\nleaderElection:\n  leaderElect: false\nprofiles:\n  - schedulerName: default-scheduler\n", c.KubeConfigPath)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _, err := devenv.StartSchedulerProcess(ctx, dir, "default-scheduler", cfg, c.KubeConfigPath)
	if err != nil {
		t.Fatalf("default scheduler: %v", err)
	}
	return p
}

// guideChartPod is bin/ome-scheduler standing in for a replica of the installed release: the
// config.yaml of ConfigMap ome/ome-scheduler-config, a token of ServiceAccount
// ome/ome-scheduler.
type guideChartPod struct {
	proc *devenv.Process
	port int
}

func (p *guideChartPod) stop() {
	if p != nil {
		p.proc.Stop(10 * time.Second)
	}
}

func startGuideChartPod(t *testing.T, ctx context.Context, c *devenv.ControlPlane) *guideChartPod {
	t.Helper()
	return startGuideChartPodBinary(t, ctx, c, "ome-scheduler")
}

// startGuideChartPodBinary is startGuideChartPod running binary (a tool name in bin/ or an
// absolute path, such as the binary of the published image).
func startGuideChartPodBinary(t *testing.T, ctx context.Context, c *devenv.ControlPlane, binary string) *guideChartPod {
	t.Helper()
	cm, err := c.Client.CoreV1().ConfigMaps("ome").Get(ctx, "ome-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap of the installed release: %v", err)
	}
	dir, err := os.MkdirTemp(c.Dir, "chart-pod-")
	if err != nil {
		t.Fatal(err)
	}
	token := serviceAccountTokenOn(t, ctx, c, "ome", "ome-scheduler")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeTokenKubeconfigOn(t, c, kubeconfig, token)
	full, err := devenv.WithKubeconfig([]byte(cm.Data["config.yaml"]), kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, full, 0o600); err != nil {
		t.Fatal(err)
	}
	proc, port, err := devenv.StartSchedulerBinary(ctx, binary, dir, "ome-scheduler", cfg, kubeconfig)
	if err != nil {
		t.Fatalf("the chart's scheduler as ServiceAccount ome/ome-scheduler: %v", err)
	}
	dumpLogOnFailure(t, proc)
	return &guideChartPod{proc: proc, port: port}
}

// monitoringCRDs stand in for the Prometheus Operator's CRDs: same names and versions, any
// content accepted.
const monitoringCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

func installMonitoringCRDs(t *testing.T, ctx context.Context, c *devenv.ControlPlane) {
	t.Helper()
	ac, err := apiextclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(monitoringCRDs, "\n---\n") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
			t.Fatal(err)
		}
		if _, err := ac.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if !waitFor(ctx, 30*time.Second, func(ctx context.Context) bool {
			_, err := c.Client.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
			got, gerr := ac.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil || gerr != nil {
				return false
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("CRD %s not established", crd.Name)
		}
	}
}

// replaceWithOldSelector turns the release's Deployment into what a chart release from before
// the instance selector label left: the same Deployment, owned by the same Helm release, whose
// selector has only app.kubernetes.io/name and app.kubernetes.io/component.
func replaceWithOldSelector(t *testing.T, ctx context.Context, c *devenv.ControlPlane, s *guideShell) {
	t.Helper()
	var dep *appsv1.Deployment
	for _, o := range splitObjects(t, helmTemplate(t, "-f", filepath.Join(s.dir, "my-values.yaml"))) {
		if o.GetKind() != "Deployment" {
			continue
		}
		dep = &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep); err != nil {
			t.Fatal(err)
		}
	}
	if dep == nil {
		t.Fatal("the chart rendered no Deployment")
	}
	delete(dep.Spec.Selector.MatchLabels, "app.kubernetes.io/instance")
	dep.Namespace = "ome"
	if dep.Annotations == nil {
		dep.Annotations = map[string]string{}
	}
	dep.Annotations["meta.helm.sh/release-name"] = "ome-scheduler"
	dep.Annotations["meta.helm.sh/release-namespace"] = "ome"
	fg := metav1.DeletePropagationForeground
	if err := c.Client.AppsV1().Deployments("ome").Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 60*time.Second, func(ctx context.Context) bool {
		_, err := c.Client.AppsV1().Deployments("ome").Get(ctx, dep.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatal("Deployment ome/ome-scheduler not deleted within 60s")
	}
	if _, err := c.Client.AppsV1().Deployments("ome").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the old-style Deployment: %v", err)
	}
}

// createPendingPod creates a bare pod in the demo namespace that names ome-scheduler.
func createPendingPod(t *testing.T, ctx context.Context, c *devenv.ControlPlane, name string) string {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNS, Name: name},
		Spec: v1.PodSpec{
			SchedulerName: "ome-scheduler",
			Containers:    []v1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := c.Client.CoreV1().Pods(demoNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// assertStaysPending checks that the pod is neither bound nor the subject of any event for d.
func assertStaysPending(t *testing.T, ctx context.Context, c *devenv.ControlPlane, name string, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	p, err := c.Client.CoreV1().Pods(demoNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
		t.Errorf("pod %s: node %q, phase %s; want Pending and unbound while no ome-scheduler runs", name, p.Spec.NodeName, p.Status.Phase)
	}
	evs, err := c.Client.EventsV1().Events(demoNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == name {
			t.Errorf("pod %s has event %s %q while no ome-scheduler runs", name, e.Reason, e.Note)
		}
	}
}
