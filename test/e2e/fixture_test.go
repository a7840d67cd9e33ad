package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chart-deployed scheduler is shared by TestSchedulerRunsAsChartServiceAccount and
// TestMetricsEndpointAuthz (the metrics test needs the counters the demo gang moved). Whichever
// runs first sets it up; TestMain stops it. Tests in this package do not run in parallel.

// readerSA is the ServiceAccount listed in scheduler.metrics.reader.serviceAccounts.
var readerSA = struct{ Namespace, Name string }{"monitoring", "prometheus"}

// readerValues renders the chart with readerSA as the only /metrics reader.
func readerValues() []string {
	return []string{"--set-json", fmt.Sprintf(`scheduler.metrics.reader.serviceAccounts=[{"name":%q,"namespace":%q}]`, readerSA.Name, readerSA.Namespace)}
}

// chartScheduler is bin/ome-scheduler running as ServiceAccount ome/ome-scheduler with the
// chart's configuration.
type chartScheduler struct {
	proc       *devenv.Process
	port       int
	kubeconfig string
	config     []byte // config.yaml exactly as rendered in the ConfigMap
	token      string // the ServiceAccount token the scheduler authenticates with
}

// demoGang is the demo gang of manifests/demo, placed by the chart scheduler.
type demoGang struct {
	pods    []string
	nodes   map[string]string // pod -> node
	created time.Time
	boundIn time.Duration
	err     error // binding failure, reported by the test that asserts on it
}

var (
	chartSched      *chartScheduler
	chartSchedProc  *devenv.Process // set as soon as the process runs, so TestMain can stop it
	chartSchedTried bool
	gang            *demoGang
	gangTried       bool
)

// stopChartScheduler stops the shared scheduler; with $OME_E2E_LOGS set to a directory, its
// log is kept there (the control plane's directory is removed).
func stopChartScheduler() {
	if chartSchedProc == nil {
		return
	}
	chartSchedProc.Stop(10 * time.Second)
	if dir := os.Getenv("OME_E2E_LOGS"); dir != "" {
		if b, err := os.ReadFile(chartSchedProc.LogPath); err == nil && os.MkdirAll(dir, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dir, "ome-scheduler.log"), b, 0o644)
		}
	}
}

// logTail returns the last n lines of a file.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// dumpLogOnFailure prints the tail of the scheduler log when the test fails.
func dumpLogOnFailure(t *testing.T, p *devenv.Process) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() && p != nil {
			t.Logf("last 50 lines of %s:\n%s", p.LogPath, logTail(p.LogPath, 50))
		}
	})
}

// getChartScheduler returns the running chart scheduler, starting it on first use.
// On failure of t, the tail of its log is printed.
func getChartScheduler(t *testing.T) *chartScheduler {
	t.Helper()
	s := ensureChartScheduler(t)
	dumpLogOnFailure(t, s.proc)
	return s
}

func ensureChartScheduler(t *testing.T) *chartScheduler {
	t.Helper()
	if !chartSchedTried {
		chartSchedTried = true
		chartSched = startChartScheduler(t)
	}
	if chartSched == nil {
		t.Fatal("the chart scheduler failed to start in an earlier test")
	}
	return chartSched
}

// startChartScheduler applies the chart's ServiceAccount, ConfigMap and RBAC (rendered with
// readerSA as metrics reader), mints a token for ome/ome-scheduler through the TokenRequest
// API and runs bin/ome-scheduler with a kubeconfig holding only that token, for its client
// connection and for delegated authentication and authorization of its secure port.
func startChartScheduler(t *testing.T) *chartScheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, ns := range []string{releaseNS, readerSA.Namespace} {
		if err := devenv.CreateNamespace(ctx, cp.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, sa := range []string{readerSA.Name, "nobody"} {
		ensureServiceAccount(t, ctx, readerSA.Namespace, sa)
	}

	var config []byte
	for _, o := range splitObjects(t, helmTemplate(t, readerValues()...)) {
		switch o.GetKind() {
		case "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if o.GetKind() == "ConfigMap" && o.GetName() == releaseName+"-config" {
			s, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
			config = []byte(s)
		}
		ri, err := resourceFor(dyn, o)
		if err != nil {
			t.Fatalf("%s: %v", objectKey(o), err)
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "ome-e2e", Force: true}); err != nil {
			t.Fatalf("apply %s: %v", objectKey(o), err)
		}
	}
	if len(config) == 0 {
		t.Fatalf("the chart rendered no ConfigMap %s-config with config.yaml", releaseName)
	}

	dir := filepath.Join(cp.Dir, "chart-scheduler")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := serviceAccountToken(t, ctx, releaseNS, releaseName)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeTokenKubeconfig(t, kubeconfig, token)
	full, err := devenv.WithKubeconfig(config, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, full, 0o600); err != nil {
		t.Fatal(err)
	}

	// --v=4, the verbosity that logs OMEGangPack's decisions: its log must not leak secrets.
	proc, port, err := devenv.StartSchedulerProcess(ctx, dir, "ome-scheduler", cfgPath, kubeconfig, "--v=4")
	if err != nil {
		t.Fatalf("start bin/ome-scheduler as ServiceAccount %s/%s: %v\nlast 50 lines of %s:\n%s",
			releaseNS, releaseName, err, filepath.Join(dir, "ome-scheduler.log"), logTail(filepath.Join(dir, "ome-scheduler.log"), 50))
	}
	chartSchedProc = proc
	return &chartScheduler{proc: proc, port: port, kubeconfig: kubeconfig, config: config, token: token}
}

func ensureServiceAccount(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	_, err := cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s/%s: %v", ns, name, err)
	}
}

// serviceAccountToken mints a one-hour token for the ServiceAccount (TokenRequest API).
func serviceAccountToken(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	return serviceAccountTokenOn(t, ctx, cp, ns, name)
}

// serviceAccountTokenOn is serviceAccountToken on another control plane.
func serviceAccountTokenOn(t *testing.T, ctx context.Context, c *devenv.ControlPlane, ns, name string) string {
	t.Helper()
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", ns, name, err)
	}
	if tr.Status.Token == "" {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s returned an empty token", ns, name)
	}
	return tr.Status.Token
}

// writeTokenKubeconfig writes a kubeconfig with the admin kubeconfig's server and CA and the
// bearer token as the only credential.
func writeTokenKubeconfig(t *testing.T, path, token string) {
	t.Helper()
	writeTokenKubeconfigOn(t, cp, path, token)
}

// writeTokenKubeconfigOn is writeTokenKubeconfig for another control plane.
func writeTokenKubeconfigOn(t *testing.T, c *devenv.ControlPlane, path, token string) {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(c.KubeConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	ctxName := admin.CurrentContext
	kctx, ok := admin.Contexts[ctxName]
	if !ok {
		t.Fatalf("admin kubeconfig has no current context %q", ctxName)
	}
	cluster := admin.Clusters[kctx.Cluster]
	if cluster == nil || cluster.Server == "" || len(cluster.CertificateAuthorityData) == 0 {
		t.Fatalf("admin kubeconfig: cluster %q lacks a server or CA data", kctx.Cluster)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "token"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// getDemoGang creates the demo gang once (manifests/demo: namespace, PodGroup, and the
// two pods of the Deployment's template, since no controller-manager runs) on the 9-node
// layout and waits up to 30 s for both members to bind.
func getDemoGang(t *testing.T) *demoGang {
	t.Helper()
	ensureChartScheduler(t)
	if !gangTried {
		gangTried = true
		gang = createDemoGang(t)
	}
	if gang == nil {
		t.Fatal("the demo gang could not be created in an earlier test")
	}
	return gang
}

func createDemoGang(t *testing.T) *demoGang {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Nodes, as the admin.
	if err := devenv.CreateLayout(ctx, cp.Client, devenv.DemoLayout); err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(repoRoot(t), "manifests", "demo")
	for _, f := range []string{"namespace.yaml", "podgroup.yaml"} {
		b, err := os.ReadFile(filepath.Join(demo, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range splitObjects(t, b) {
			ri, err := resourceFor(dyn, o)
			if err != nil {
				t.Fatalf("%s: %s: %v", f, objectKey(o), err)
			}
			if _, err := ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
				t.Fatalf("%s: create %s: %v", f, objectKey(o), err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(demo, "gang.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &dep); err != nil {
		t.Fatalf("gang.yaml: %v", err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Fatalf("gang.yaml: want a Deployment with 2 replicas, got %v", dep.Spec.Replicas)
	}
	g := &demoGang{nodes: map[string]string{}, created: time.Now()}
	for i := 0; i < int(*dep.Spec.Replicas); i++ {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: fmt.Sprintf("%s-%d", dep.Name, i),
				Labels: dep.Spec.Template.Labels, Annotations: dep.Spec.Template.Annotations},
			Spec: dep.Spec.Template.Spec,
		}
		if _, err := cp.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		g.pods = append(g.pods, pod.Name)
	}
	nodes, err := devenv.WaitForBound(ctx, cp.Client, dep.Namespace, 30*time.Second, g.pods...)
	g.boundIn = time.Since(g.created)
	g.nodes = nodes
	if err != nil {
		var msgs []string
		for _, p := range g.pods {
			msgs = append(msgs, fmt.Sprintf("%s: %q", p, devenv.FailedSchedulingMessages(ctx, cp.Client, dep.Namespace, p)))
		}
		g.err = fmt.Errorf("%v; bound so far %v; scheduling messages: %s", err, nodes, strings.Join(msgs, "; "))
	}
	return g
}

const demoNS = "gang-demo"

// waitFor polls cond every 200 ms until it returns true or the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) bool) bool {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	}) == nil
}
