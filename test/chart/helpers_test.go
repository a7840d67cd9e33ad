// Package chart_test runs the real helm binary against charts/ome-scheduler and checks the
// renders against the chart's documented behaviour (charts/ome-scheduler/README.md). The helm
// binary comes from $HELM, else $OME_BIN_DIR/helm or <repo root>/bin/helm (built by `make bin/helm` or `make tools`).
package chart_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const (
	releaseName = "ome-scheduler"
	releaseNS   = "ome"
	kubeVersion = "1.35.0"
)

// repoRoot returns the repository root or fails the test.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := devenv.RepoRoot()
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	return root
}

// helmBin returns the helm binary ($HELM, else bin/helm) or fails the test.
func helmBin(t *testing.T) string {
	t.Helper()
	bin, err := devenv.HelmBin()
	if err != nil {
		t.Fatalf("%v (or set HELM)", err)
	}
	return bin
}

func chartDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "charts", "ome-scheduler")
}

// helmResult is the outcome of one helm invocation.
type helmResult struct {
	stdout string
	stderr string
	err    error
}

// resultOf splits a devenv.Helm outcome into helm's output, its standard error and its exit
// error.
func resultOf(out []byte, err error) helmResult {
	res := helmResult{stdout: string(out), err: err}
	if he, ok := errors.AsType[*devenv.HelmError](err); ok {
		res.stderr, res.err = he.Stderr, he.Err
	}
	return res
}

func runHelm(t *testing.T, args ...string) helmResult {
	t.Helper()
	helmBin(t)
	return resultOf(devenv.Helm(context.Background(), args...))
}

// helmTemplate runs `helm template` through devenv.HelmTemplate; empty fields of r are the
// chart's defaults (release ome-scheduler, charts/ome-scheduler, namespace ome, 1.35.0).
func helmTemplate(t *testing.T, r devenv.HelmRender) helmResult {
	t.Helper()
	helmBin(t)
	return resultOf(devenv.HelmTemplate(context.Background(), r))
}

// templateKube runs `helm template` against the chart with an explicit kube version.
func templateKube(t *testing.T, kube, ns string, args ...string) helmResult {
	t.Helper()
	return helmTemplate(t, devenv.HelmRender{Release: releaseName, Namespace: ns, KubeVersion: kube, Args: args})
}

// template runs `helm template` with --kube-version 1.35.0 in namespace ome.
func template(t *testing.T, args ...string) helmResult {
	t.Helper()
	return templateKube(t, kubeVersion, releaseNS, args...)
}

// doc is one rendered manifest.
type doc struct {
	source string
	text   string
	obj    map[string]any
}

func (d doc) kind() string { s, _ := d.obj["kind"].(string); return s }

func (d doc) name() string { s, _ := dig(d.obj, "metadata", "name").(string); return s }

func (d doc) namespace() string { s, _ := dig(d.obj, "metadata", "namespace").(string); return s }

// rendered is a parsed `helm template` output.
type rendered struct {
	raw  string
	docs []doc
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

func parseRender(t *testing.T, raw string) *rendered {
	t.Helper()
	r := &rendered{raw: raw}
	for _, chunk := range docSep.Split(raw, -1) {
		chunk = strings.TrimLeft(chunk, "\n")
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		source := ""
		if strings.HasPrefix(chunk, "# Source: ") {
			nl := strings.IndexByte(chunk, '\n')
			if nl < 0 {
				nl = len(chunk)
			}
			source = strings.TrimPrefix(chunk[:nl], "# Source: ")
			chunk = chunk[min(nl+1, len(chunk)):]
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(chunk), &obj); err != nil {
			t.Fatalf("rendered document from %s is not valid YAML: %v\n%s", source, err, chunk)
		}
		if obj == nil {
			continue
		}
		r.docs = append(r.docs, doc{source: source, text: chunk, obj: obj})
	}
	return r
}

// render runs helm template and fails the test when helm fails.
func render(t *testing.T, args ...string) *rendered {
	t.Helper()
	res := template(t, args...)
	if res.err != nil {
		t.Fatalf("helm template %v failed: %v\n%s", args, res.err, res.stderr)
	}
	return parseRender(t, res.stdout)
}

func renderNS(t *testing.T, ns string, args ...string) *rendered {
	t.Helper()
	res := templateKube(t, kubeVersion, ns, args...)
	if res.err != nil {
		t.Fatalf("helm template -n %s %v failed: %v\n%s", ns, args, res.err, res.stderr)
	}
	return parseRender(t, res.stdout)
}

func (r *rendered) find(kind, name string) (doc, bool) {
	for _, d := range r.docs {
		if d.kind() == kind && d.name() == name {
			return d, true
		}
	}
	return doc{}, false
}

func (r *rendered) get(t *testing.T, kind, name string) doc {
	t.Helper()
	d, ok := r.find(kind, name)
	if !ok {
		t.Fatalf("no %s %q in the render; objects: %v", kind, name, r.ids())
	}
	return d
}

func (r *rendered) count(kind, name string) int {
	n := 0
	for _, d := range r.docs {
		if (kind == "" || d.kind() == kind) && d.name() == name {
			n++
		}
	}
	return n
}

func (r *rendered) ofKind(kind string) []doc {
	var out []doc
	for _, d := range r.docs {
		if d.kind() == kind {
			out = append(out, d)
		}
	}
	return out
}

func (r *rendered) ids() []string {
	var out []string
	for _, d := range r.docs {
		id := d.kind() + "/" + d.name()
		if ns := d.namespace(); ns != "" {
			id += "@" + ns
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// dig walks maps (string keys) and slices (int indexes).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v, ok = m[k]
			if !ok {
				return nil
			}
		case int:
			s, ok := v.([]any)
			if !ok || k < 0 || k >= len(s) {
				return nil
			}
			v = s[k]
		default:
			panic(fmt.Sprintf("bad path element %T", p))
		}
	}
	return v
}

func has(v any, path ...any) bool {
	if len(path) == 0 {
		return v != nil
	}
	parent := dig(v, path[:len(path)-1]...)
	switch k := path[len(path)-1].(type) {
	case string:
		m, ok := parent.(map[string]any)
		if !ok {
			return false
		}
		_, ok = m[k]
		return ok
	case int:
		s, ok := parent.([]any)
		return ok && k >= 0 && k < len(s)
	}
	return false
}

// fromYAML parses a YAML snippet the same way the render is parsed, so that numbers and
// strings compare exactly (a quoted "1" never equals a bare 1).
func fromYAML(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("bad expected YAML: %v\n%s", err, text)
	}
	return v
}

// wantYAML asserts that got equals the YAML snippet want.
func wantYAML(t *testing.T, what string, got any, want string) {
	t.Helper()
	w := fromYAML(t, want)
	if !reflect.DeepEqual(got, w) {
		gy, _ := yaml.Marshal(got)
		wy, _ := yaml.Marshal(w)
		t.Errorf("%s mismatch\n--- got:\n%s--- want:\n%s", what, gy, wy)
	}
}

func wantEq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func lines(text string) []string { return strings.Split(text, "\n") }

func hasLine(text, line string) bool {
	for _, l := range lines(text) {
		if l == line {
			return true
		}
	}
	return false
}

func wantLine(t *testing.T, what, text, line string) {
	t.Helper()
	if !hasLine(text, line) {
		t.Errorf("%s: no line exactly %q", what, line)
	}
}

func wantNoLine(t *testing.T, what, text, line string) {
	t.Helper()
	if hasLine(text, line) {
		t.Errorf("%s: unexpected line %q", what, line)
	}
}

func wantContains(t *testing.T, what, text, sub string) {
	t.Helper()
	if !strings.Contains(text, sub) {
		t.Errorf("%s: does not contain %q", what, sub)
	}
}

func wantNotContains(t *testing.T, what, text, sub string) {
	t.Helper()
	if strings.Contains(text, sub) {
		t.Errorf("%s: unexpectedly contains %q", what, sub)
	}
}

// configYAML returns the config.yaml value of ConfigMap {name}-config.
func configYAML(t *testing.T, r *rendered, name string) string {
	t.Helper()
	cm := r.get(t, "ConfigMap", name+"-config")
	s, ok := dig(cm.obj, "data", "config.yaml").(string)
	if !ok {
		t.Fatalf("ConfigMap %s-config has no string data.config.yaml", name)
	}
	return s
}

func checksum(t *testing.T, r *rendered, name string) string {
	t.Helper()
	d := r.get(t, "Deployment", name)
	s, ok := dig(d.obj, "spec", "template", "metadata", "annotations", "checksum/config").(string)
	if !ok {
		t.Fatalf("Deployment %s has no checksum/config annotation", name)
	}
	return s
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func indent(block string, n int) string {
	pad := strings.Repeat(" ", n)
	ls := lines(strings.TrimSuffix(block, "\n"))
	for i, l := range ls {
		if l != "" {
			ls[i] = pad + l
		}
	}
	return strings.Join(ls, "\n") + "\n"
}

// writeValues writes a values file into a temporary directory and returns its path.
func writeValues(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFile writes content to path, failing the test on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// copyChart copies the chart into a temporary directory and returns the copy's path.
func copyChart(t *testing.T) string {
	t.Helper()
	src := chartDir(t)
	dst := filepath.Join(t.TempDir(), "ome-scheduler")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy chart: %v", err)
	}
	return dst
}

// chartMeta returns Chart.yaml's version and appVersion.
func chartMeta(t *testing.T) (version, appVersion string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	version, _ = c["version"].(string)
	appVersion, _ = c["appVersion"].(string)
	if version == "" || appVersion == "" {
		t.Fatalf("Chart.yaml lacks version/appVersion strings: %v", c)
	}
	return version, appVersion
}

// expectedLabels is the label set every object the chart renders carries.
func expectedLabels(t *testing.T) map[string]any {
	t.Helper()
	v, av := chartMeta(t)
	return map[string]any{
		"helm.sh/chart":                "ome-scheduler-" + v,
		"app.kubernetes.io/name":       "ome-scheduler",
		"app.kubernetes.io/instance":   releaseName,
		"app.kubernetes.io/component":  "scheduler",
		"app.kubernetes.io/version":    av,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "ome",
	}
}

// selectorLabels select the pods of release releaseName.
var selectorLabels = map[string]any{
	"app.kubernetes.io/name":      "ome-scheduler",
	"app.kubernetes.io/instance":  releaseName,
	"app.kubernetes.io/component": "scheduler",
}

// fixturePath returns the absolute path of a file under testdata/.
func fixturePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixture returns the content of a file under testdata/.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fixturePath(t, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return string(b)
}

// defaultConfig is the config.yaml the chart renders with every default (namespace ome).
func defaultConfig(t *testing.T) string {
	t.Helper()
	return fixture(t, "config/default.yaml")
}

// replaceOnce applies old→new exactly once, failing when old is absent, so that derived
// expectations cannot silently equal the default.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("expected exactly one %q in the base text", old)
	}
	return strings.Replace(s, old, new, 1)
}
