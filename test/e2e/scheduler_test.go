package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// TestSchedulerRunsAsChartServiceAccount runs bin/ome-scheduler with nothing but the chart:
// its config.yaml as rendered (plus clientConnection.kubeconfig, which in a cluster is the
// in-cluster config; the rendered clientConnection holds only qps and burst) and a token of ServiceAccount ome/ome-scheduler bound only by the chart's
// RBAC. The demo gang of manifests/demo must land whole in clique-a, both members bound within
// 30 s on two different nodes, the leader-election Lease must be held, each member must have a
// Scheduled event from ome-scheduler, and the scheduler must never have been refused anything.
func TestSchedulerRunsAsChartServiceAccount(t *testing.T) {
	s := getChartScheduler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Checked last, also when an assertion below stops the test: the scheduler was refused
	// nothing it asked for.
	defer func() {
		// The secure port refusing a caller (the endpoint tests' deliberate 403s) is the
		// scheduler's authorization at work, not a refusal of the scheduler.
		refusedCaller := regexp.MustCompile(`"Forbidden" URI=|resp=403`)
		var lines []string
		for _, l := range grepLog(t, s.proc.LogPath, regexp.MustCompile(`(?i)forbidden`)) {
			if !refusedCaller.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			n := len(lines)
			if n > 20 {
				lines = append(lines[:20], "...")
			}
			t.Errorf("the scheduler log has %d 'forbidden' lines (the chart's RBAC is insufficient):\n%s", n, strings.Join(lines, "\n"))
		}
		// No secrets in the --v=4 log: the ServiceAccount token never appears.
		if lines := grepLog(t, s.proc.LogPath, regexp.MustCompile(regexp.QuoteMeta(s.token))); len(lines) > 0 {
			t.Errorf("the scheduler log contains its bearer token in %d lines", len(lines))
		}
	}()

	// The kubeconfig authenticates as the chart's ServiceAccount and nothing more.
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	saClient, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ssr, err := saClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the scheduler's kubeconfig: %v", err)
	}
	if want := "system:serviceaccount:" + releaseNS + ":" + releaseName; ssr.Status.UserInfo.Username != want {
		t.Fatalf("the scheduler's kubeconfig authenticates as %q, want %q", ssr.Status.UserInfo.Username, want)
	}
	// The chart sets the client's rate limit and nothing else of clientConnection: in a
	// cluster the scheduler connects with its in-cluster config.
	var rendered struct {
		ClientConnection map[string]any `json:"clientConnection"`
	}
	if err := yaml.Unmarshal(s.config, &rendered); err != nil {
		t.Fatalf("parse the chart's config.yaml: %v", err)
	}
	if want := map[string]any{"qps": 200.0, "burst": 400.0}; !reflect.DeepEqual(rendered.ClientConnection, want) {
		t.Errorf("the chart's config.yaml sets clientConnection %v, want %v:\n%s", rendered.ClientConnection, want, s.config)
	}

	// The Lease named after the scheduler, in the release namespace, has a holder.
	var holder string
	if !waitFor(ctx, 20*time.Second, func(ctx context.Context) bool {
		l, err := cp.Client.CoordinationV1().Leases(releaseNS).Get(ctx, releaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false
		}
		holder = *l.Spec.HolderIdentity
		return holder != ""
	}) {
		t.Errorf("Lease %s/%s has no holder within 20s", releaseNS, releaseName)
	} else {
		t.Logf("Lease %s/%s held by %s", releaseNS, releaseName, holder)
	}

	// Both members bound within 30 s, on two different clique-a nodes.
	g := getDemoGang(t)
	if g.err != nil {
		t.Fatalf("demo gang: %v", g.err)
	}
	t.Logf("demo gang bound in %s: %v", g.boundIn.Round(time.Millisecond), g.nodes)
	seen := map[string]string{}
	for _, p := range g.pods {
		n := g.nodes[p]
		if other, dup := seen[n]; dup {
			t.Errorf("pods %s and %s share node %s (required anti-affinity)", other, p, n)
		}
		seen[n] = p
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := node.Labels[devenv.CliqueKey]; c != "clique-a" {
			t.Errorf("pod %s on node %s in %s, want clique-a (smallest clique that fits 2)", p, n, c)
		}
		// The binding carried the placement annotations (docs/reference.md section 7).
		pod, err := cp.Client.CoreV1().Pods(demoNS).Get(ctx, p, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d, k := pod.Annotations[gangpack.DomainAnnotation], pod.Annotations[gangpack.DomainKeyAnnotation]; d != "clique-a" || k != devenv.CliqueKey {
			t.Errorf("pod %s annotated %s=%q %s=%q, want clique-a and %s", p, gangpack.DomainAnnotation, d, gangpack.DomainKeyAnnotation, k, devenv.CliqueKey)
		}
	}

	// A Scheduled event per member, reported by ome-scheduler.
	for _, p := range g.pods {
		want := fmt.Sprintf("Successfully assigned %s/%s to %s", demoNS, p, g.nodes[p])
		var got []string
		ok := waitFor(ctx, 15*time.Second, func(ctx context.Context) bool {
			evs, err := cp.Client.EventsV1().Events(demoNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			got = got[:0]
			for _, e := range evs.Items {
				if e.Regarding.Name != p || e.Reason != "Scheduled" {
					continue
				}
				got = append(got, fmt.Sprintf("%s: %s", e.ReportingController, e.Note))
				if e.ReportingController == releaseName && e.Note == want {
					return true
				}
			}
			return false
		})
		if !ok {
			t.Errorf("pod %s: no Scheduled event from %s with %q; Scheduled events: %q", p, releaseName, want, got)
		}
	}

	// At --v=4 the decision log names the clique the gang pinned, as structured keys.
	pinned := grepLog(t, s.proc.LogPath, regexp.MustCompile(`"gangpack\.pinGang\.result".* gang="gang-demo/gang-demo".* domain="clique-a" source="pinned"`))
	if len(pinned) != 1 {
		t.Errorf("want exactly one gangpack.pinGang.result line with source=pinned for clique-a, got %d", len(pinned))
	}
	if enter := grepLog(t, s.proc.LogPath, regexp.MustCompile(`"gangpack\.pinGang\.enter".* room=`)); len(enter) == 0 {
		t.Error("no gangpack.pinGang.enter line with the room map")
	}
}

// bin/ome-scheduler refuses an invalid plugin argument, and a misspelt one (the arguments are
// decoded strictly), with the startup error documented in docs/reference.md and a non-zero exit.
func TestInvalidPluginArgsFailStartup(t *testing.T) {
	bin, err := devenv.Bin("ome-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"invalid topologyKey", "topologyKey: \"gpu clique\"\ngcIntervalSeconds: 60", `topologyKey \"gpu clique\" is not a valid node label key: `},
		{"misspelt key", "gcIntervalSeconds: 60\ntopologyKye: rack", `decode OMEGangPack args: unknown field \"topologyKye\" (valid fields: allowedTopologyKeys, `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			p := devenv.Profile{Args: tc.args}
			if err := os.WriteFile(cfg, []byte(p.Render(cp.KubeConfigPath)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "--config="+cfg, "--secure-port=0").CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("ome-scheduler with %q: err %v, want a non-zero exit; output:\n%s", tc.args, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output lacks %s:\n%s", tc.want, out)
			}
		})
	}
}

// grepLog returns the lines of the file matching re.
func grepLog(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// Plugin metric families and their documented label values.
var pluginFamilies = []struct {
	name   string
	typ    dto.MetricType
	label  string
	values []string
}{
	{"ome_scheduler_gang_pin_total", dto.MetricType_COUNTER, "result",
		[]string{"pinned", "preferred", "pinned_after_filter", "no_fit", "reserved", "adopted", "stale_replan", "topology_replan", "nominated"}},
	{"ome_scheduler_gang_gate_total", dto.MetricType_COUNTER, "result", []string{"wait", "admit"}},
	{"ome_scheduler_gang_activation_total", dto.MetricType_COUNTER, "trigger",
		[]string{"permit", "templates_complete", "reservation_released", "podgroup_change", "domain_failed"}},
	{"ome_scheduler_gang_unwind_total", dto.MetricType_COUNTER, "", nil},
	{"ome_scheduler_pinned_groups", dto.MetricType_GAUGE, "", nil},
	{"ome_scheduler_placement_group_total", dto.MetricType_COUNTER, "result", []string{"placed", "no_fit", "unwound"}},
	{"ome_scheduler_binds_in_flight", dto.MetricType_GAUGE, "", nil},
	{"ome_scheduler_bind_window_wait_seconds_total", dto.MetricType_COUNTER, "", nil},
	{"ome_scheduler_placement_labels_applied", dto.MetricType_GAUGE, "", nil},
}

// TestMetricsEndpointAuthz checks the secure port of the chart-deployed scheduler:
// /metrics refuses anonymous callers and ServiceAccounts without the reader binding, serves
// the ServiceAccount listed in scheduler.metrics.reader.serviceAccounts, and exposes the
// plugin's families next to kube-scheduler's; /healthz and /readyz need no credentials.
func TestMetricsEndpointAuthz(t *testing.T) {
	s := getChartScheduler(t)
	g := getDemoGang(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := fmt.Sprintf("https://127.0.0.1:%d", s.port)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificate of a local process
	}}
	get := func(path, token string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	// Probes are served without credentials.
	for _, p := range []string{"/healthz", "/readyz"} {
		var code int
		var body []byte
		if !waitFor(ctx, 20*time.Second, func(context.Context) bool { code, body = get(p, ""); return code == http.StatusOK }) {
			t.Errorf("GET %s without credentials: %d %s, want 200", p, code, body)
		}
	}

	// Refused: anonymous.
	if code, body := get("/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous GET /metrics: %d, want 401 or 403 (%.200s)", code, body)
	}
	// Refused: an authenticated ServiceAccount without the reader binding.
	nobody := serviceAccountToken(t, ctx, readerSA.Namespace, "nobody")
	if code, body := get("/metrics", nobody); code != http.StatusForbidden {
		t.Errorf("GET /metrics as %s/nobody: %d, want 403 (%.200s)", readerSA.Namespace, code, body)
	}

	// Allowed by RBAC: kubectl auth can-i get /metrics --as=system:serviceaccount:monitoring:prometheus.
	user := fmt.Sprintf("system:serviceaccount:%s:%s", readerSA.Namespace, readerSA.Name)
	sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user,
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + readerSA.Namespace, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sar.Status.Allowed {
		t.Errorf("can-i get /metrics --as=%s: no (%s)", user, sar.Status.Reason)
	}

	// The listed ServiceAccount reads /metrics.
	prom := serviceAccountToken(t, ctx, readerSA.Namespace, readerSA.Name)
	code, body := get("/metrics", prom)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as %s: %d, want 200 (%.300s)", user, code, body)
	}
	fams := parseMetrics(t, body)
	for _, f := range pluginFamilies {
		mf, ok := fams[f.name]
		if !ok {
			t.Errorf("family %s missing from /metrics", f.name)
			continue
		}
		if mf.GetType() != f.typ {
			t.Errorf("%s: type %s, want %s", f.name, mf.GetType(), f.typ)
		}
		if !strings.HasPrefix(mf.GetHelp(), "[ALPHA] ") {
			t.Errorf("%s: help %q does not start with \"[ALPHA] \"", f.name, mf.GetHelp())
		}
		if f.label == "" {
			if len(mf.GetMetric()) != 1 || len(mf.GetMetric()[0].GetLabel()) != 0 {
				t.Errorf("%s: want one unlabelled series, got %v", f.name, mf.GetMetric())
			}
			continue
		}
		got := labelValues(mf, f.label)
		sort.Strings(got)
		want := append([]string(nil), f.values...)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s{%s}: values %v, want exactly %v", f.name, f.label, got, want)
		}
	}
	for _, kf := range []string{"scheduler_schedule_attempts_total", "scheduler_pending_pods"} {
		if _, ok := fams[kf]; !ok {
			t.Errorf("kube-scheduler family %s missing from /metrics", kf)
		}
	}

	// The demo gang moved the leader's counters.
	if g.err != nil {
		t.Fatalf("demo gang not placed, cannot check W42: %v", g.err)
	}
	thresholds := []struct {
		family, label, value string
	}{
		{"ome_scheduler_gang_pin_total", "result", "pinned"},
		{"ome_scheduler_gang_gate_total", "result", "wait"},
		{"ome_scheduler_gang_gate_total", "result", "admit"},
		{"ome_scheduler_gang_activation_total", "trigger", "permit"},
	}
	var last map[string]float64
	ok := waitFor(ctx, 10*time.Second, func(context.Context) bool {
		code, body := get("/metrics", prom)
		if code != http.StatusOK {
			return false
		}
		fams := parseMetrics(t, body)
		last = map[string]float64{}
		all := true
		for _, th := range thresholds {
			v := sampleValue(fams[th.family], th.label, th.value)
			last[fmt.Sprintf("%s{%s=%q}", th.family, th.label, th.value)] = v
			if v < 1 {
				all = false
			}
		}
		return all
	})
	if !ok {
		t.Errorf("after the demo gang, want each of these ≥ 1: %v", last)
	}
	t.Logf("plugin counters after the demo gang: %v", last)
}

// parseMetrics parses the Prometheus text exposition.
func parseMetrics(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func labelValues(mf *dto.MetricFamily, label string) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

// sampleValue returns the counter or gauge value of the series with label=value (-1 if absent).
func sampleValue(mf *dto.MetricFamily, label, value string) float64 {
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestSchedulerVersion: bin/ome-scheduler --version prints the release version of the VERSION
// file (with a v, the image tag) and the Kubernetes version it is built from, the Makefile's
// KUBE_VERSION, which stays what kube-scheduler itself reports (--version=raw).
func TestSchedulerVersion(t *testing.T) {
	root := repoRoot(t)
	version := strings.TrimSpace(readFile(t, filepath.Join(root, "VERSION")))
	km := regexp.MustCompile(`(?m)^KUBE_VERSION\s*:=\s*(v\S+)\s*$`).FindStringSubmatch(readFile(t, filepath.Join(root, "Makefile")))
	if km == nil {
		t.Fatal("Makefile has no KUBE_VERSION")
	}
	bin, err := devenv.Bin("ome-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ome-scheduler --version: %v\n%s", err, out)
	}
	if want := "ome-scheduler v" + version + " (Kubernetes " + km[1] + ")\n"; string(out) != want {
		t.Errorf("ome-scheduler --version printed %q, want %q", out, want)
	}
	out, err = exec.Command(bin, "--version=raw").CombinedOutput()
	if err != nil {
		t.Fatalf("ome-scheduler --version=raw: %v\n%s", err, out)
	}
	wantIn(t, "ome-scheduler --version=raw", string(out), `GitVersion:"`+km[1]+`"`)
}
