package chart_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// Optional Grafana dashboard

func TestGrafanaDashboard(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		r := render(t)
		if _, ok := r.find("ConfigMap", "ome-scheduler-grafana-dashboard"); ok {
			t.Errorf("dashboard ConfigMap rendered by default")
		}
	})
	t.Run("enabled", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.metrics.grafanaDashboard.enabled=true")
		cm := r.get(t, "ConfigMap", "ome-scheduler-grafana-dashboard")
		wantEq(t, "namespace", cm.namespace(), "ome")
		wantEq(t, "grafana_dashboard label", dig(cm.obj, "metadata", "labels", "grafana_dashboard"), "1")
		raw, _ := dig(cm.obj, "data", "ome-scheduler.json").(string)
		var dash map[string]any
		if err := json.Unmarshal([]byte(raw), &dash); err != nil {
			t.Fatalf("dashboard is not valid JSON: %v", err)
		}
		panels, _ := dash["panels"].([]any)
		var exprs []string
		for _, p := range panels {
			targets, _ := dig(p, "targets").([]any)
			for _, tg := range targets {
				e, _ := dig(tg, "expr").(string)
				exprs = append(exprs, e)
			}
		}
		all := strings.Join(exprs, "\n")
		for _, m := range []string{
			"rate(ome_scheduler_gang_pin_total",
			"rate(ome_scheduler_gang_gate_total",
			"rate(ome_scheduler_gang_activation_total",
			"rate(ome_scheduler_gang_unwind_total",
			"ome_scheduler_pinned_groups",
		} {
			wantContains(t, "dashboard expressions", all, m)
		}
	})
}

// ---------------------------------------------------------------------------------------
// Optional PrometheusRule

// omeAlerts are the alerts of the chart's PrometheusRule, as the chart README's Alerts table
// lists them: the OMEGangPack alerts plus the scheduler's availability.
var omeAlerts = []string{
	"OMESchedulerDown", "OMESchedulerNoLeader", "OMEGangSplitPlacement", "OMEGangAlreadySplit",
	"OMEGangNoFit", "OMEStrandedCapacity", "OMEGangReservedWait", "OMEGangsStuckForming",
	"OMEGangUnwinds", "OMEGangFormationSlow", "OMEGangDegraded",
}

// defaultSeverity is each alert's severity label by default: critical where the README's
// Alerts table says a person is woken, warning where it opens a ticket, the two severities
// Alertmanager configurations and kube-prometheus-stack route and inhibit on.
var defaultSeverity = map[string]string{
	"OMESchedulerDown": "critical", "OMESchedulerNoLeader": "critical", "OMEGangSplitPlacement": "critical",
	"OMEGangAlreadySplit": "warning", "OMEGangNoFit": "warning", "OMEStrandedCapacity": "warning",
	"OMEGangReservedWait": "warning", "OMEGangsStuckForming": "critical", "OMEGangUnwinds": "warning",
	"OMEGangFormationSlow": "warning", "OMEGangDegraded": "critical",
}

// runbookBase is the default runbookBaseURL: the operations guide on the project's repository.
const runbookBase = "https://github.com/moirai-internal/ome-scheduler/blob/main/docs/operations.md"

// alertRules returns the rules of the PrometheusRule by alert name.
func alertRules(t *testing.T, r *rendered, name string) (doc, map[string]map[string]any) {
	t.Helper()
	pr := r.get(t, "PrometheusRule", name)
	groups, _ := dig(pr.obj, "spec", "groups").([]any)
	if len(groups) != 1 {
		t.Fatalf("PrometheusRule has %d groups, want 1", len(groups))
	}
	wantEq(t, "group name", dig(groups[0], "name"), name)
	out := map[string]map[string]any{}
	rules, _ := dig(groups[0], "rules").([]any)
	for _, ri := range rules {
		rule, _ := ri.(map[string]any)
		a, _ := rule["alert"].(string)
		if _, dup := out[a]; dup {
			t.Errorf("alert %s appears twice", a)
		}
		out[a] = rule
	}
	return pr, out
}

// balanced reports whether (), {} and [] nest properly outside quoted strings.
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	inQuote := false
	for _, c := range expr {
		switch {
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '(' || c == '{' || c == '[':
			stack = append(stack, c)
		case c == ')' || c == '}' || c == ']':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inQuote
}

func TestPrometheusRule(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		if n := len(render(t).ofKind("PrometheusRule")); n != 0 {
			t.Errorf("default render has %d PrometheusRules", n)
		}
	})
	t.Run("enabled", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.metrics.prometheusRule.enabled=true", "--set", "scheduler.metrics.prometheusRule.additionalLabels.release=kube-prometheus")
		pr, rules := alertRules(t, r, "ome-scheduler")
		wantEq(t, "apiVersion", pr.obj["apiVersion"], "monitoring.coreos.com/v1")
		wantEq(t, "namespace", pr.namespace(), releaseNS)
		labels := expectedLabels(t)
		labels["release"] = "kube-prometheus"
		wantEq(t, "labels", dig(pr.obj, "metadata", "labels"), labels)
		var names []string
		for n := range rules {
			names = append(names, n)
		}
		sort.Strings(names)
		want := append([]string(nil), omeAlerts...)
		sort.Strings(want)
		wantEq(t, "alerts", names, want)
		const sel = `job="ome-scheduler-metrics",namespace="ome"`
		for name, rule := range rules {
			expr, _ := rule["expr"].(string)
			if !balanced(expr) {
				t.Errorf("%s: unbalanced expression %q", name, expr)
			}
			if strings.Count(expr, "{") != strings.Count(expr, "{"+sel) {
				t.Errorf("%s: a series lacks the release selector: %q", name, expr)
			}
			wantEq(t, name+" severity", dig(rule, "labels", "severity"), defaultSeverity[name])
			wantEq(t, name+" runbook_url", dig(rule, "annotations", "runbook_url"), runbookBase+"#"+strings.ToLower(name))
			for _, a := range []string{"summary", "description"} {
				if s, _ := dig(rule, "annotations", a).(string); s == "" {
					t.Errorf("%s: no %s", name, a)
				}
			}
		}
		for name, want := range map[string]string{
			"OMESchedulerDown":      `absent(up{` + sel + `} == 1)`,
			"OMESchedulerNoLeader":  `leader_election_master_status{` + sel + `,name="kube-scheduler"}`,
			"OMEGangSplitPlacement": `ome_scheduler_gang_placement_total{` + sel + `,outcome="split"}[1h]`,
			"OMEGangAlreadySplit":   `outcome="split_refused"`,
			"OMEGangNoFit":          `ome_scheduler_gang_pin_total{` + sel + `,result="no_fit"}[15m]`,
			"OMEStrandedCapacity":   `ome_scheduler_stranded_capacity{` + sel + `}`,
			"OMEGangReservedWait":   `result="reserved"`,
			"OMEGangsStuckForming":  `ome_scheduler_pinned_groups{` + sel + `}`,
			"OMEGangUnwinds":        `sum(increase(ome_scheduler_gang_unwind_total{` + sel + `}[30m])) > 10`,
			"OMEGangFormationSlow":  `ome_scheduler_gang_formation_duration_seconds_bucket{` + sel + `}[1h]`,
			"OMEGangDegraded":       `max by (topology_key) (ome_scheduler_degraded_gangs{` + sel + `}) > 0`,
		} {
			wantContains(t, name+" expr", rules[name]["expr"].(string), want)
		}
		// Prometheus templates in annotations survive Helm.
		wantEq(t, "OMEStrandedCapacity summary", dig(rules["OMEStrandedCapacity"], "annotations", "summary"),
			"{{ $value }} free {{ $labels.resource }} stranded in domains too small for pending gangs")
		wantEq(t, "OMEGangsStuckForming for", rules["OMEGangsStuckForming"]["for"], "15m")
		wantEq(t, "OMEGangDegraded summary", dig(rules["OMEGangDegraded"], "annotations", "summary"),
			"{{ $value }} gangs under {{ $labels.topology_key }} have had fewer bound members than minMember for 15 minutes")
	})
	t.Run("custom selector and name without leader election", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.metrics.prometheusRule.enabled=true", "--set", "scheduler.name=gangs",
			"-f", writeValues(t, "scheduler:\n  metrics:\n    prometheusRule:\n      selector: 'cluster=\"c1\",job=\"sched\"'\n"),
			"--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.enabled=false")
		pr, rules := alertRules(t, r, "gangs")
		if _, ok := rules["OMESchedulerNoLeader"]; ok {
			t.Errorf("OMESchedulerNoLeader rendered without leader election")
		}
		wantEq(t, "alert count", len(rules), len(omeAlerts)-1)
		wantContains(t, "PrometheusRule", pr.text, `absent(up{cluster="c1",job="sched"} == 1)`)
		wantNotContains(t, "PrometheusRule", pr.text, "gangs-metrics")
	})
}

// Per-alert settings: a disabled alert is left out, a severity replaces the default, and an
// empty runbookBaseURL drops runbook_url while another base is used as given.
func TestPrometheusRuleAlertSettings(t *testing.T) {
	const pr = "scheduler.metrics.prometheusRule."
	t.Run("disabled, severity and runbook base", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", pr+"enabled=true",
			"--set", pr+"alerts.OMEGangUnwinds.enabled=false",
			"--set", pr+"alerts.OMEGangDegraded.severity=page",
			"--set", pr+"alerts.OMESchedulerDown.severity=info",
			"--set", pr+"runbookBaseURL=https://wiki.example.com/ome/operations")
		_, rules := alertRules(t, r, "ome-scheduler")
		if _, ok := rules["OMEGangUnwinds"]; ok {
			t.Errorf("OMEGangUnwinds rendered with alerts.OMEGangUnwinds.enabled=false")
		}
		wantEq(t, "alert count", len(rules), len(omeAlerts)-1)
		wantEq(t, "OMEGangDegraded severity", dig(rules["OMEGangDegraded"], "labels", "severity"), "page")
		wantEq(t, "OMESchedulerDown severity", dig(rules["OMESchedulerDown"], "labels", "severity"), "info")
		wantEq(t, "OMEGangNoFit severity", dig(rules["OMEGangNoFit"], "labels", "severity"), "warning")
		wantEq(t, "OMEGangNoFit runbook_url", dig(rules["OMEGangNoFit"], "annotations", "runbook_url"),
			"https://wiki.example.com/ome/operations#omegangnofit")
	})
	t.Run("no runbook base", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", pr+"enabled=true", "--set", pr+"runbookBaseURL=")
		obj, rules := alertRules(t, r, "ome-scheduler")
		wantEq(t, "alert count", len(rules), len(omeAlerts))
		wantNotContains(t, "PrometheusRule", obj.text, "runbook_url")
	})
	t.Run("refused settings", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"--set", pr + "alerts.OMEGangDegrade.severity=critical"},
			{"--set", pr + "alerts.OMEGangDegraded.severity="},
			{"--set-string", pr + "alerts.OMEGangDegraded.enabled=false"},
			{"--set", pr + "runbookBaseURL=docs/operations.md"},
		} {
			if res := template(t, args...); res.err == nil {
				t.Errorf("helm template %v succeeded; want a schema error", args)
			}
		}
	})
}
