package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chart's monitoring objects against a real Prometheus (bin/prometheus and bin/promtool,
// built from the Go module proxy by make tools): the alert rules of its PrometheusRule under
// promtool, and a scrape of the chart scheduler configured as the Prometheus Operator renders
// the chart's ServiceMonitor.

const alertTestsFile = "ome-scheduler-alerts_test.yaml"

// renderedRuleGroups renders the chart's PrometheusRule for release ome-scheduler in
// namespace ome and returns a Prometheus rule file with its groups, and the alert names.
func renderedRuleGroups(t *testing.T) ([]byte, []string) {
	t.Helper()
	var groups any
	for _, o := range splitObjects(t, helmTemplate(t, "--set", "scheduler.metrics.prometheusRule.enabled=true")) {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		g, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "groups")
		if !ok {
			t.Fatal("PrometheusRule without spec.groups")
		}
		groups = g
	}
	if groups == nil {
		t.Fatal("the chart rendered no PrometheusRule with scheduler.metrics.prometheusRule.enabled=true")
	}
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &parsed); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range parsed.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	return b, alerts
}

func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := devenv.Bin("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPrometheusRules: the groups of the chart's PrometheusRule pass `promtool check rules`,
// and `promtool test rules` with test/prometheus/ome-scheduler-alerts_test.yaml, which has,
// for every alert of the rule, a case where it fires and one where it does not.
func TestPrometheusRules(t *testing.T) {
	rules, alerts := renderedRuleGroups(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ome-scheduler-rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, dir, "check", "rules", "ome-scheduler-rules.yaml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(alerts)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: output lacks %q:\n%s", want, out)
	}

	src := filepath.Join(repoRoot(t), "test", "prometheus", alertTestsFile)
	tests, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, alertTestsFile), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	out = promtool(t, dir, "test", "rules", alertTestsFile)
	t.Logf("promtool test rules:\n%s", out)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: no SUCCESS:\n%s", out)
	}

	// Coverage: each alert fires in some case and stays quiet in another.
	var spec struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name  string `json:"name"`
			Cases []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.RuleFiles) != 1 || spec.RuleFiles[0] != "ome-scheduler-rules.yaml" {
		t.Errorf("%s: rule_files %v, want [ome-scheduler-rules.yaml]", alertTestsFile, spec.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	known := map[string]bool{}
	for _, a := range alerts {
		known[a] = true
	}
	for _, tg := range spec.Tests {
		for _, c := range tg.Cases {
			if !known[c.Alertname] {
				t.Errorf("%s: test %q checks alert %q, which the chart does not render", alertTestsFile, tg.Name, c.Alertname)
			}
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				quiet[c.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] || !quiet[a] {
			t.Errorf("%s: alert %s lacks a case where it fires (%v) or one where it does not (%v)", alertTestsFile, a, fires[a], quiet[a])
		}
	}
	if len(alerts) != 11 {
		t.Errorf("the chart renders %d alerts (%v), the README lists 11", len(alerts), alerts)
	}
}

// TestPrometheusScrapesChartScheduler runs bin/prometheus against the chart scheduler after
// the demo gang was placed. Its scrape job is what the Prometheus Operator renders from the
// chart's ServiceMonitor (rendered with readerSA as metrics reader and a 3 s interval): scheme
// https, the ServiceAccount token as bearer credentials (the operator's bearerTokenFile is
// Prometheus's own ServiceAccount token; here a token of readerSA, bound to
// ClusterRole ome-scheduler-metrics-reader by the chart), insecureSkipVerify, and the target
// labels job (the Service name), namespace, service and endpoint; the target is the
// scheduler's secure port on 127.0.0.1 instead of the pod IPs behind the Service. The
// chart's PrometheusRule is loaded too. Checked through the HTTP API: up is 1, the plugin's
// series after one gang of two (admitted once, one member waited, one pin, one single-domain
// placement), the leader flag, and every alert inactive with healthy evaluations, which also
// proves the rule's default selector matches the series the ServiceMonitor produces.
func TestPrometheusScrapesChartScheduler(t *testing.T) {
	s := getChartScheduler(t)
	g := getDemoGang(t)
	if g.err != nil {
		t.Fatalf("demo gang not placed: %v", g.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The ServiceMonitor and Service the chart renders.
	var sm, svc *unstructured.Unstructured
	for _, o := range splitObjects(t, helmTemplate(t, append(readerValues(),
		"--set", "scheduler.metrics.serviceMonitor.enabled=true",
		"--set", "scheduler.metrics.serviceMonitor.interval=3s",
		"--set", "scheduler.metrics.serviceMonitor.scrapeTimeout=3s")...)) {
		switch o.GetKind() {
		case "ServiceMonitor":
			sm = o
		case "Service":
			svc = o
		}
	}
	if sm == nil || svc == nil {
		t.Fatal("the chart rendered no ServiceMonitor or no Service")
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints: %v", eps)
	}
	ep := eps[0].(map[string]any)
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(ep, path...); return v }
	insecure, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if str("port") != "https-metrics" || str("scheme") != "https" || str("path") != "/metrics" || !insecure ||
		str("bearerTokenFile") != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		len(svcPorts) != 1 || svcPorts[0].(map[string]any)["name"] != "https-metrics" {
		t.Fatalf("the chart's ServiceMonitor endpoint is not what this test translates: %v (Service ports %v)", ep, svcPorts)
	}

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(serviceAccountToken(t, ctx, readerSA.Namespace, readerSA.Name)), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, alerts := renderedRuleGroups(t)
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	job := map[string]any{
		"job_name":        fmt.Sprintf("serviceMonitor/%s/%s/0", sm.GetNamespace(), sm.GetName()),
		"honor_labels":    false,
		"scrape_interval": str("interval"),
		"scrape_timeout":  str("scrapeTimeout"),
		"metrics_path":    str("path"),
		"scheme":          str("scheme"),
		"authorization":   map[string]any{"type": "Bearer", "credentials_file": tokenFile},
		"tls_config":      map[string]any{"insecure_skip_verify": insecure},
		"static_configs":  []any{map[string]any{"targets": []any{fmt.Sprintf("127.0.0.1:%d", s.port)}}},
		"relabel_configs": []any{
			map[string]any{"target_label": "namespace", "replacement": svc.GetNamespace()},
			map[string]any{"target_label": "service", "replacement": svc.GetName()},
			map[string]any{"target_label": "endpoint", "replacement": str("port")},
			map[string]any{"target_label": "job", "replacement": svc.GetName()},
		},
	}
	cfg, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": str("interval"), "evaluation_interval": "1s"},
		"rule_files":     []any{"rules.yaml"},
		"scrape_configs": []any{job},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "config", "prometheus.yml")

	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := devenv.StartProcess(dir, "prometheus", "prometheus", "--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop(10 * time.Second)
	dumpLogOnFailure(t, proc)
	api := fmt.Sprintf("http://127.0.0.1:%d", port)
	hc := &http.Client{Timeout: 5 * time.Second}
	getJSON := func(path string, into any) error {
		resp, err := hc.Get(api + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return json.Unmarshal(b, into)
	}
	query := func(q string) (map[string]float64, error) {
		var r struct {
			Status string `json:"status"`
			Data   struct {
				ResultType string `json:"resultType"`
				Result     []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := getJSON("/api/v1/query?query="+url.QueryEscape(q), &r); err != nil {
			return nil, err
		}
		if r.Status != "success" || r.Data.ResultType != "vector" {
			return nil, fmt.Errorf("query %s: status %s, result type %s", q, r.Status, r.Data.ResultType)
		}
		out := map[string]float64{}
		for _, s := range r.Data.Result {
			keys := make([]string, 0, len(s.Metric))
			for k, v := range s.Metric {
				if k != "__name__" {
					keys = append(keys, k+"="+strconv.Quote(v))
				}
			}
			sort.Strings(keys)
			f, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			if err != nil {
				return nil, err
			}
			out["{"+strings.Join(keys, ",")+"}"] = f
		}
		return out, nil
	}

	// Ready, then scraped: up is 1 for the one target, with the labels the operator sets.
	var last any
	if !waitFor(ctx, 60*time.Second, func(context.Context) bool {
		r, err := query(`up`)
		last = fmt.Sprint(r, err)
		return err == nil && len(r) == 1 && r[fmt.Sprintf(`{endpoint="https-metrics",instance="127.0.0.1:%d",job="ome-scheduler-metrics",namespace="ome",service="ome-scheduler-metrics"}`, s.port)] == 1
	}) {
		var targets any
		_ = getJSON("/api/v1/targets", &targets)
		t.Fatalf("up is not 1 within 60s: %v; targets: %v", last, targets)
	}

	sel := `job="ome-scheduler-metrics",namespace="ome"`
	for _, tc := range []struct {
		query string
		want  float64
	}{
		{`up{` + sel + `}`, 1},
		{`ome_scheduler_gang_gate_total{` + sel + `,result="admit"}`, 1},
		{`ome_scheduler_gang_gate_total{` + sel + `,result="wait"}`, 1},
		{`ome_scheduler_pinned_groups{` + sel + `}`, 1},
		{`ome_scheduler_gang_pin_total{` + sel + `,result="pinned"}`, 1},
		{`ome_scheduler_gang_placement_total{` + sel + `,outcome="single_domain"}`, 1},
		{`ome_scheduler_gang_placement_total{` + sel + `,outcome="split"}`, 0},
		{`ome_scheduler_gang_unwind_total{` + sel + `}`, 0},
		{`leader_election_master_status{` + sel + `,name="kube-scheduler"}`, 1},
	} {
		r, err := query(tc.query)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if len(r) != 1 {
			t.Errorf("%s: %d series %v, want 1", tc.query, len(r), r)
			continue
		}
		for series, v := range r {
			if v != tc.want {
				t.Errorf("%s: %s = %v, want %v", tc.query, series, v, tc.want)
			} else {
				t.Logf("%s%s = %v", tc.query, series, v)
			}
		}
	}

	// Every query of the chart's dashboard evaluates against the scraped series.
	checkDashboardQueries(t, "ome-scheduler-metrics", query)

	// Every alert of the chart's rule is evaluated without error and is inactive.
	type ruleState struct {
		Name, State, Health, LastError string
	}
	var states []ruleState
	if !waitFor(ctx, 60*time.Second, func(context.Context) bool {
		var r struct {
			Data struct {
				Groups []struct {
					Rules []struct {
						Name           string    `json:"name"`
						Type           string    `json:"type"`
						State          string    `json:"state"`
						Health         string    `json:"health"`
						LastError      string    `json:"lastError"`
						LastEvaluation time.Time `json:"lastEvaluation"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		if err := getJSON("/api/v1/rules", &r); err != nil {
			return false
		}
		states = states[:0]
		ok := true
		for _, g := range r.Data.Groups {
			for _, rule := range g.Rules {
				states = append(states, ruleState{rule.Name, rule.State, rule.Health, rule.LastError})
				if rule.Type != "alerting" || rule.State != "inactive" || rule.Health != "ok" || rule.LastEvaluation.IsZero() {
					ok = false
				}
			}
		}
		return ok && len(states) == len(alerts)
	}) {
		t.Errorf("the chart's alerts are not all evaluated, healthy and inactive within 60s (want %d): %+v", len(alerts), states)
	}
}
