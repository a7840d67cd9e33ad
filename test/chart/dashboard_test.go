package chart_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// dashboardExprs returns the PromQL of every panel target of the chart's Grafana dashboard,
// by panel title.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "ome-scheduler.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	out := map[string][]string{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has a target without expr", p.Title)
			}
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// exportedMetrics returns the metric families the scheduler binary can export that the
// dashboard may use: the names OMEGangPack registers (pkg/plugins/gangpack/internal/metrics)
// and kube-scheduler's scheduler_* families (k8s.io/kubernetes pkg/scheduler/metrics of the
// module version the binary is built from).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "pkg", "plugins", "gangpack", "internal", "metrics", "*.go"))
	omeName := regexp.MustCompile(`Name:\s*"(ome_scheduler_[a-z0-9_]+)"`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range omeName.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = repoRoot(t)
	dir, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "pkg", "scheduler", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	kubeName := regexp.MustCompile(`Subsystem:\s*SchedulerSubsystem,\s*Name:\s*"([a-z0-9_]+)"`)
	for _, m := range kubeName.FindAllStringSubmatch(string(b), -1) {
		out["scheduler_"+m[1]] = true
	}
	if len(out) < 20 || !out["ome_scheduler_pinned_groups"] || !out["scheduler_pending_pods"] {
		t.Fatalf("found too few metric definitions: %v", out)
	}
	return out
}

var metricRef = regexp.MustCompile(`\b(?:ome_)?scheduler_[a-z0-9_]+`)

// Every series a panel reads is a metric the scheduler exports (a histogram's _bucket, _sum
// and _count included), and the dashboard has the panels operators look for first: degraded
// gangs, the bind window, and kube-scheduler's own latency and queue metrics. Whether each
// query parses and evaluates is checked against a real Prometheus by
// test/e2e/prometheus_test.go.
func TestDashboardReferencesExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	var all []string
	for title, exprs := range dashboardExprs(t) {
		for _, e := range exprs {
			all = append(all, e)
			refs := metricRef.FindAllString(e, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q: %q reads no scheduler metric", title, e)
			}
			for _, r := range refs {
				family := r
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base := strings.TrimSuffix(r, suffix); base != r && exported[base] {
						family = base
					}
				}
				if !exported[family] {
					t.Errorf("panel %q reads %s, which the scheduler does not export", title, r)
				}
			}
			if !strings.Contains(e, `{job=~"$job"`) {
				t.Errorf("panel %q: %q is not restricted to the selected jobs", title, e)
			}
		}
	}
	sort.Strings(all)
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		"ome_scheduler_degraded_gangs{",
		"ome_scheduler_binds_in_flight{",
		"rate(ome_scheduler_bind_window_wait_seconds_total{",
		"rate(scheduler_scheduling_attempt_duration_seconds_bucket{",
		"rate(scheduler_pod_scheduling_sli_duration_seconds_bucket{",
		"sum by (queue) (scheduler_pending_pods{",
	} {
		wantContains(t, "dashboard expressions", joined, want)
	}
}
