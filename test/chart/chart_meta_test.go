package chart_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// ---------------------------------------------------------------------------------------
// Chart.yaml

func TestChartYAML(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, want string }{
		{"apiVersion", "v2"},
		{"name", "ome-scheduler"},
		{"type", "application"},
		{"version", "1.3.0"},
		{"appVersion", "v1.3.0"},
		{"kubeVersion", ">=1.35.0-0 <1.36.0-0"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			wantEq(t, "Chart.yaml "+tc.key, c[tc.key], tc.want)
		})
	}
	t.Run("appVersion quoted", func(t *testing.T) {
		wantLine(t, "Chart.yaml", string(b), `appVersion: "v1.3.0"`)
	})
	t.Run("description", func(t *testing.T) {
		d, _ := c["description"].(string)
		for _, w := range []string{"second", "OMEGangPack", "schedulerName", "PodGroup CRD", "--skip-crds"} {
			wantContains(t, "description", d, w)
		}
	})
	// crds/ holds the PodGroup CRD (crds_test.go).
	t.Run("no dependencies", func(t *testing.T) {
		if _, ok := c["dependencies"]; ok {
			t.Errorf("Chart.yaml declares dependencies")
		}
		if _, err := os.Stat(filepath.Join(chartDir(t), "charts")); err == nil {
			t.Errorf("chart has a charts/ directory")
		}
	})
}

// ---------------------------------------------------------------------------------------
// helm lint

func TestHelmLint(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"single replica without PDB", []string{"--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.enabled=false"}},
		{"servicemonitor and scrapers", []string{
			"--set", "scheduler.metrics.serviceMonitor.enabled=true",
			"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus","namespace":"monitoring"}]`,
		}},
		{"grafana dashboard", []string{"--set", "scheduler.metrics.grafanaDashboard.enabled=true"}},
		{"hardened (README)", []string{
			"--set", "scheduler.image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"--set", "scheduler.metrics.tls.secretName=ome-scheduler-metrics-tls",
			"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"metrics-scraper","namespace":"ome"}]`,
			"--set", "scheduler.metrics.serviceMonitor.enabled=true",
			"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=ome-scheduler-metrics-tls",
			"--set", "scheduler.metrics.serviceMonitor.authorization.credentials.name=metrics-scraper-token",
			"--set", "scheduler.metrics.prometheusRule.enabled=true",
			"--set", "scheduler.networkPolicy.enabled=true",
			"--set-json", `scheduler.networkPolicy.from=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"lint", "--strict", "--kube-version", kubeVersion, chartDir(t)}, tc.args...)
			res := runHelm(t, args...)
			if res.err != nil {
				t.Fatalf("helm lint --strict failed: %v\n%s%s", res.err, res.stdout, res.stderr)
			}
			wantContains(t, "helm lint output", res.stdout, "1 chart(s) linted, 0 chart(s) failed")
			wantNotContains(t, "helm lint output", res.stdout, "[WARNING]")
			wantNotContains(t, "helm lint output", res.stdout, "[ERROR]")
		})
	}
}
