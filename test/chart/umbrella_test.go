package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The chart as a dependency of a parent (umbrella) chart, testdata/umbrella: a platform chart
// whose values pass global.* keys every chart of the platform reads and switch the
// dependency with condition ome-scheduler.enabled. Helm validates the subchart's values,
// globals included, against the subchart's values.schema.json, so the schema must accept
// any key under global and the root key enabled, and still refuse other unknown keys.

// umbrellaChart copies testdata/umbrella next to a copy of the chart (its dependency is
// file://../ome-scheduler) and runs `helm dependency build` on it.
func umbrellaChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(copyChart(t)), "umbrella")
	src := fixturePath(t, "umbrella")
	for _, f := range []string{"Chart.yaml", "values.yaml", filepath.Join("templates", "configmap.yaml")} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	if res := runHelm(t, "dependency", "build", dir); res.err != nil {
		t.Fatalf("helm dependency build: %v\n%s%s", res.err, res.stdout, res.stderr)
	}
	version, _ := chartMeta(t)
	if _, err := os.Stat(filepath.Join(dir, "charts", "ome-scheduler-"+version+".tgz")); err != nil {
		t.Fatalf("helm dependency build did not package the chart: %v", err)
	}
	return dir
}

func templateUmbrella(t *testing.T, dir string, args ...string) helmResult {
	t.Helper()
	return runHelm(t, append([]string{"template", "platform", dir, "--namespace", releaseNS,
		"--kube-version", kubeVersion}, args...)...)
}

func TestUmbrellaChart(t *testing.T) {
	dir := umbrellaChart(t)

	t.Run("renders with the parent's globals", func(t *testing.T) {
		res := templateUmbrella(t, dir)
		if res.err != nil {
			t.Fatalf("helm template of the umbrella chart: %v\n%s", res.err, res.stderr)
		}
		r := parseRender(t, res.stdout)
		wantEq(t, "parent's ConfigMap registry", dig(r.get(t, "ConfigMap", "platform-platform").obj, "data", "registry"), "registry.example.com")
		ps := podSpec(t, r, "ome-scheduler")
		_, appVersion := chartMeta(t)
		// global.hub and global.imagePullSecrets still reach the subchart.
		wantEq(t, "image", dig(ps, "containers", 0, "image"), "registry.example.com/platform/ome-scheduler:"+appVersion)
		wantYAML(t, "imagePullSecrets", dig(ps, "imagePullSecrets"), "[{name: platform-pull}]")
		if has(ps, "priorityClassName") {
			t.Errorf("ome-scheduler.scheduler.priorityClassName: \"\" did not omit priorityClassName")
		}
		wantContains(t, "config.yaml", configYAML(t, r, "ome-scheduler"), `topologyKey: "nvidia.com/gpu.clique"`)
	})
	t.Run("the condition turns the dependency off", func(t *testing.T) {
		res := templateUmbrella(t, dir, "--set", "ome-scheduler.enabled=false")
		if res.err != nil {
			t.Fatalf("helm template: %v\n%s", res.err, res.stderr)
		}
		r := parseRender(t, res.stdout)
		if _, ok := r.find("Deployment", "ome-scheduler"); ok {
			t.Errorf("ome-scheduler.enabled=false still renders the scheduler")
		}
	})
	t.Run("a misspelt root key is still refused", func(t *testing.T) {
		res := templateUmbrella(t, dir, "--set", "ome-scheduler.schedulr.replicaCount=1")
		if res.err == nil {
			t.Fatalf("helm template with ome-scheduler.schedulr succeeded; want a schema error")
		}
		wantContains(t, "stderr", res.stderr, "values don't meet the specifications of the schema")
		wantContains(t, "stderr", res.stderr, "additional properties 'schedulr' not allowed")
	})
	t.Run("a typed global is still checked", func(t *testing.T) {
		res := templateUmbrella(t, dir, "--set", "global.hub=5")
		if res.err == nil || !strings.Contains(res.stderr, "/global/hub") {
			t.Errorf("global.hub=5: want a schema error at /global/hub, got %v\n%s", res.err, res.stderr)
		}
	})
}
