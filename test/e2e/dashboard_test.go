package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart's Grafana dashboard (charts/ome-scheduler/dashboards/ome-scheduler.json) against
// promtool and a real Prometheus: every panel query parses, and evaluates against the series
// the chart scheduler exports.

// dashboardQueries returns every panel target's PromQL with the dashboard's variables
// replaced as Grafana would for the release's job: $job by the metrics Service's job and
// $__rate_interval by a range.
func dashboardQueries(t *testing.T, job string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "ome-scheduler", "dashboards", "ome-scheduler.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("$job", regexp.QuoteMeta(job), "$__rate_interval", "1m")
	var out []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, r.Replace(tg.Expr))
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// TestDashboardQueriesParse: every panel query, as a recording rule, passes `promtool check
// rules`, which parses it with Prometheus's PromQL parser.
func TestDashboardQueriesParse(t *testing.T) {
	queries := dashboardQueries(t, "ome-scheduler-metrics")
	var rules []any
	for i, q := range queries {
		rules = append(rules, map[string]any{"record": fmt.Sprintf("dashboard:query_%d", i), "expr": q})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, dir, "check", "rules", "dashboard.yaml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(queries)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: output lacks %q:\n%s", want, out)
	}
}

// seriesOnlyWhenDegraded are families the dashboard reads that the chart scheduler of these
// tests has no series of: with no scheduler.plugin.topologyKey set, ome_scheduler_degraded_gangs
// appears with the first degraded gang.
var seriesOnlyWhenDegraded = map[string]bool{"ome_scheduler_degraded_gangs": true}

var dashboardMetric = regexp.MustCompile(`\b(?:ome_)?scheduler_[a-z0-9_]+`)

// checkDashboardQueries runs every panel query through query (Prometheus's HTTP API, after
// the chart scheduler was scraped): each evaluates without error, and each metric it reads
// has series from the scheduler.
func checkDashboardQueries(t *testing.T, job string, query func(string) (map[string]float64, error)) {
	t.Helper()
	seen := map[string]bool{}
	for _, q := range dashboardQueries(t, job) {
		if _, err := query(q); err != nil {
			t.Errorf("dashboard query %s: %v", q, err)
		}
		for _, m := range dashboardMetric.FindAllString(q, -1) {
			if seen[m] || seriesOnlyWhenDegraded[m] {
				continue
			}
			seen[m] = true
			r, err := query(fmt.Sprintf(`count({__name__=%q,job=%q})`, m, job))
			if err != nil || len(r) != 1 {
				t.Errorf("dashboard metric %s: no series scraped from the scheduler (%v, %v)", m, r, err)
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d dashboard metrics checked: %v", len(seen), seen)
	}
}
