package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// docs/install.md section 10 (GitOps) has two files: an Argo CD Application and a Flux
// HelmRepository plus HelmRelease. Neither tool runs here; the test checks what the page says
// about them: the chart version they name is the chart's, Flux creates and replaces the CRD,
// and the chart renders with their values, with the CRD (--include-crds, as Argo CD renders)
// carrying the annotations that keep Argo CD from pruning or deleting it.

// chartVersion returns charts/ome-scheduler/Chart.yaml's version.
func chartVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "ome-scheduler", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Version string `json:"version"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Version
}

// readGuideObjects parses a multi-document file the guide wrote into s.dir.
func readGuideObjects(t *testing.T, s *guideShell, name string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return splitObjects(t, b)
}

// renderGitOpsValues renders the chart as release ome-scheduler in namespace ome with values
// (a GitOps object's values) and checks the objects the page relies on.
func renderGitOpsValues(t *testing.T, s *guideShell, what string, values map[string]any) {
	t.Helper()
	if len(values) == 0 {
		t.Fatalf("%s: no values", what)
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(s.dir, strings.ReplaceAll(what, " ", "-")+"-values.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range splitObjects(t, helmTemplate(t, "-f", f, "--include-crds")) {
		kinds[o.GetKind()] = o
	}
	crd := kinds["CustomResourceDefinition"]
	if crd == nil || crd.GetName() != "podgroups.scheduling.x-k8s.io" {
		t.Fatalf("%s: the render has no PodGroup CRD", what)
	}
	ann := crd.GetAnnotations()
	if ann["argocd.argoproj.io/sync-options"] != "Prune=false,Delete=false" || ann["helm.sh/resource-policy"] != "keep" {
		t.Errorf("%s: the CRD's annotations %v lack Prune=false,Delete=false or keep", what, ann)
	}
	d := kinds["Deployment"]
	if d == nil {
		t.Fatalf("%s: no Deployment", what)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img, _ := cs[0].(map[string]any)["image"].(string); !strings.HasPrefix(img, "registry.example.com/ome/ome-scheduler:") {
		t.Errorf("%s: image %q does not come from global.hub", what, img)
	}
	if pr := kinds["PrometheusRule"]; pr == nil || pr.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("%s: no PrometheusRule labelled release=kube-prometheus-stack", what)
	}
}

// checkGitOpsBlocks writes the GitOps files of the guide and checks them.
func checkGitOpsBlocks(t *testing.T, g *guide, s *guideShell) {
	t.Helper()
	version := chartVersion(t)

	g.write(t, s, "argocd-application.yaml")
	apps := readGuideObjects(t, s, "argocd-application.yaml")
	if len(apps) != 1 || apps[0].GetKind() != "Application" {
		t.Fatalf("argocd-application.yaml: want one Application, got %d objects", len(apps))
	}
	src, _, _ := unstructured.NestedMap(apps[0].Object, "spec", "source")
	if src["chart"] != "ome-scheduler" || src["targetRevision"] != version {
		t.Errorf("Application source %v: want chart ome-scheduler, targetRevision %s", src, version)
	}
	if skip, _, _ := unstructured.NestedBool(src, "helm", "skipCrds"); skip {
		t.Errorf("the Application skips the CRD; the page installs it")
	}
	vals, _, _ := unstructured.NestedMap(src, "helm", "valuesObject")
	renderGitOpsValues(t, s, "argocd application", vals)

	g.write(t, s, "flux-helmrelease.yaml")
	objs := readGuideObjects(t, s, "flux-helmrelease.yaml")
	var hr *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "HelmRelease" {
			hr = o
		}
	}
	if len(objs) != 2 || hr == nil {
		t.Fatalf("flux-helmrelease.yaml: want a HelmRepository and a HelmRelease, got %d objects", len(objs))
	}
	for _, path := range [][]string{{"spec", "install", "crds"}, {"spec", "upgrade", "crds"}} {
		if v, _, _ := unstructured.NestedString(hr.Object, path...); v != "CreateReplace" {
			t.Errorf("HelmRelease %s: %q, want CreateReplace", strings.Join(path, "."), v)
		}
	}
	if v, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "version"); v != version {
		t.Errorf("HelmRelease chart version %q, want %s", v, version)
	}
	vals, _, _ = unstructured.NestedMap(hr.Object, "spec", "values")
	renderGitOpsValues(t, s, "flux helmrelease", vals)
}

// TestInstallGuideGitOps checks section 10 on its own (TestInstallGuide checks it too, with
// the rest of the page).
func TestInstallGuideGitOps(t *testing.T) {
	g := loadGuide(t, filepath.Join(repoRoot(t), "docs", "install.md"))
	checkGitOpsBlocks(t, g, newGuideShell(t, ""))
}
