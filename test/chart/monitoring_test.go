package chart_test

import (
	"encoding/json"
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
