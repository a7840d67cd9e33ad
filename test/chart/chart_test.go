// Package chart_test runs the real helm binary against charts/ome-scheduler and checks the
// renders against the chart contract (chart.md, render checks of §7). The helm binary comes
// from $HELM, else <repo root>/bin/helm (built by `make tools`).
package chart_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	releaseName = "ome-scheduler"
	releaseNS   = "ome"
	kubeVersion = "1.35.0"
)

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = fmt.Errorf("go.mod not found above the working directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatalf("repo root: %v", rootErr)
	}
	return rootDir
}

// helmBin returns the helm binary: $HELM if set, else <repo root>/bin/helm.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join(repoRoot(t), "bin", "helm")
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		t.Fatalf("helm not found: run make tools")
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

func runHelm(t *testing.T, args ...string) helmResult {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// Keep helm away from any user configuration or cluster.
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	err := cmd.Run()
	return helmResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// templateKube runs `helm template` against the chart with an explicit kube version.
func templateKube(t *testing.T, kube, ns string, args ...string) helmResult {
	t.Helper()
	full := append([]string{"template", releaseName, chartDir(t), "--kube-version", kube, "--namespace", ns}, args...)
	return runHelm(t, full...)
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

// expectedLabels is the label set every object carries (chart.md §4).
func expectedLabels(t *testing.T) map[string]any {
	t.Helper()
	v, av := chartMeta(t)
	return map[string]any{
		"helm.sh/chart":                "ome-scheduler-" + v,
		"app.kubernetes.io/name":       "ome-scheduler",
		"app.kubernetes.io/component":  "scheduler",
		"app.kubernetes.io/version":    av,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "ome",
	}
}

var selectorLabels = map[string]any{
	"app.kubernetes.io/name":      "ome-scheduler",
	"app.kubernetes.io/component": "scheduler",
}

// defaultConfig is the config.yaml of chart.md §4.1 (every default, namespace ome).
const defaultConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: ome-scheduler
  resourceNamespace: ome
profiles:
  - schedulerName: ome-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: OMEGangPack
        disabled:
          - name: DefaultPreemption
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 10
          - name: OMEGangPack
            weight: 10
        disabled:
          - name: PodTopologySpread
    pluginConfig:
      - name: OMEGangPack
        args:
          podGroupTopologyKeyAnnotation: "ome.io/topology-key"
          unsupportedPlacementGroupLabel: "ome.io/placement-group"
          defaultPermitTimeoutSeconds: 600
          podGroupSyncTimeoutSeconds: 30
          gcIntervalSeconds: 60
          standaloneDomainPacking: true
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
`

const defaultResourcesBlock = `        resources:
          limits:
            cpu: "2"
            memory: 12Gi
          requests:
            cpu: 200m
            memory: 4Gi
`

// replaceOnce applies old→new exactly once, failing when old is absent, so that derived
// expectations cannot silently equal the default.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("expected exactly one %q in the base text", old)
	}
	return strings.Replace(s, old, new, 1)
}

// ---------------------------------------------------------------------------------------
// §1 Chart.yaml

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
		{"version", "0.1.0"},
		{"appVersion", "0.1.0"},
		{"kubeVersion", ">=1.35.0-0 <1.36.0-0"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			wantEq(t, "Chart.yaml "+tc.key, c[tc.key], tc.want)
		})
	}
	t.Run("appVersion quoted", func(t *testing.T) {
		wantLine(t, "Chart.yaml", string(b), `appVersion: "0.1.0"`)
	})
	t.Run("description", func(t *testing.T) {
		d, _ := c["description"].(string)
		for _, w := range []string{"second", "OMEGangPack", "schedulerName", "PodGroup CRD", "does not install"} {
			wantContains(t, "description", d, w)
		}
	})
	t.Run("no dependencies or CRDs", func(t *testing.T) {
		if _, ok := c["dependencies"]; ok {
			t.Errorf("Chart.yaml declares dependencies")
		}
		if _, err := os.Stat(filepath.Join(chartDir(t), "crds")); err == nil {
			t.Errorf("chart has a crds/ directory")
		}
		if _, err := os.Stat(filepath.Join(chartDir(t), "charts")); err == nil {
			t.Errorf("chart has a charts/ directory")
		}
	})
}

// ---------------------------------------------------------------------------------------
// §7.1 helm lint

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

// ---------------------------------------------------------------------------------------
// §7.2 default render

func TestDefaultRender(t *testing.T) {
	res := template(t)
	if res.err != nil {
		t.Fatalf("default render failed: %v\n%s", res.err, res.stderr)
	}
	r := parseRender(t, res.stdout)
	version, appVersion := chartMeta(t)

	t.Run("objects", func(t *testing.T) {
		want := []string{
			"ClusterRole/ome-scheduler-extras",
			"ClusterRole/ome-scheduler-metrics-reader",
			"ClusterRoleBinding/ome-scheduler-auth-delegator",
			"ClusterRoleBinding/ome-scheduler-extras",
			"ClusterRoleBinding/ome-scheduler-system-scheduler",
			"ClusterRoleBinding/ome-scheduler-system-volume-scheduler",
			"ConfigMap/ome-scheduler-config@ome",
			"Deployment/ome-scheduler@ome",
			"PodDisruptionBudget/ome-scheduler@ome",
			"RoleBinding/ome-scheduler-extension-apiserver-authentication-reader@kube-system",
			"Service/ome-scheduler-metrics@ome",
			"ServiceAccount/ome-scheduler@ome",
		}
		wantEq(t, "rendered objects", r.ids(), want)
	})

	t.Run("labels on every object", func(t *testing.T) {
		want := expectedLabels(t)
		if len(r.docs) == 0 {
			t.Fatal("no objects rendered")
		}
		for _, d := range r.docs {
			wantEq(t, d.kind()+"/"+d.name()+" labels", dig(d.obj, "metadata", "labels"), want)
		}
		wantLine(t, "render", res.stdout, "    helm.sh/chart: ome-scheduler-"+version)
		wantLine(t, "render", res.stdout, `    app.kubernetes.io/version: "`+appVersion+`"`)
	})

	t.Run("configmap config.yaml exact", func(t *testing.T) {
		got := configYAML(t, r, "ome-scheduler")
		if got != defaultConfig {
			t.Errorf("config.yaml differs from chart.md §4.1\n--- got:\n%s\n--- want:\n%s", got, defaultConfig)
		}
	})

	t.Run("configmap raw text and indentation", func(t *testing.T) {
		cm := r.get(t, "ConfigMap", "ome-scheduler-config")
		wantEq(t, "ConfigMap source", cm.source, "ome-scheduler/templates/configmap.yaml")
		wantContains(t, "ConfigMap text", cm.text, "data:\n  config.yaml: |\n"+indent(defaultConfig, 4))
		for _, l := range []string{
			"          multiPoint:",
			"              - name: OMEGangPack",
			"          score:",
			"              - name: NodeResourcesFit",
			"                type: MostAllocated",
			"              - name: PodTopologySpread",
			`              podGroupTopologyKeyAnnotation: "ome.io/topology-key"`,
			`              unsupportedPlacementGroupLabel: "ome.io/placement-group"`,
			"              defaultPermitTimeoutSeconds: 600",
			"              podGroupSyncTimeoutSeconds: 30",
			"              gcIntervalSeconds: 60",
			"              standaloneDomainPacking: true",
		} {
			wantLine(t, "ConfigMap", cm.text, l)
		}
		wantEq(t, "ConfigMap namespace", cm.namespace(), "ome")
		if data, _ := dig(cm.obj, "data").(map[string]any); len(data) != 1 {
			t.Errorf("ConfigMap data has %d keys, want only config.yaml", len(data))
		}
	})

	t.Run("no percentageOfNodesToScore", func(t *testing.T) {
		wantNotContains(t, "render", res.stdout, "percentageOfNodesToScore")
	})

	t.Run("raw strings of §7.2", func(t *testing.T) {
		for _, s := range []string{
			"kind: PodDisruptionBudget",
			"name: ome-scheduler-metrics",
			"path: /healthz",
			"path: /readyz",
			"requiredDuringSchedulingIgnoredDuringExecution:",
			"topologyKey: kubernetes.io/hostname",
			"whenUnsatisfiable: ScheduleAnyway",
			"maxUnavailable: 1",
			"maxSurge: 0",
			defaultResourcesBlock,
		} {
			wantContains(t, "default render", res.stdout, s)
		}
	})

	t.Run("deployment", func(t *testing.T) {
		d := r.get(t, "Deployment", "ome-scheduler")
		wantEq(t, "apiVersion", d.obj["apiVersion"], "apps/v1")
		wantEq(t, "namespace", d.namespace(), "ome")
		wantYAML(t, "spec.replicas", dig(d.obj, "spec", "replicas"), "2")
		wantYAML(t, "spec.strategy", dig(d.obj, "spec", "strategy"), `
type: RollingUpdate
rollingUpdate:
  maxUnavailable: 1
  maxSurge: 0
`)
		wantEq(t, "spec.selector.matchLabels", dig(d.obj, "spec", "selector", "matchLabels"), selectorLabels)
		wantEq(t, "pod labels", dig(d.obj, "spec", "template", "metadata", "labels"), expectedLabels(t))
		ann, _ := dig(d.obj, "spec", "template", "metadata", "annotations").(map[string]any)
		if len(ann) != 1 {
			t.Errorf("pod annotations = %v, want only checksum/config", ann)
		}
		if sum, _ := ann["checksum/config"].(string); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum) {
			t.Errorf("checksum/config = %q, want a sha256 hex digest", sum)
		}
		wantYAML(t, "pod spec", dig(d.obj, "spec", "template", "spec"), `
serviceAccountName: ome-scheduler
securityContext:
  runAsNonRoot: true
  seccompProfile:
    type: RuntimeDefault
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app.kubernetes.io/name: ome-scheduler
            app.kubernetes.io/component: scheduler
        topologyKey: kubernetes.io/hostname
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        app.kubernetes.io/name: ome-scheduler
        app.kubernetes.io/component: scheduler
containers:
  - name: scheduler
    image: ome-scheduler:latest
    imagePullPolicy: IfNotPresent
    command: ["/ome-scheduler"]
    args:
      - --config=/etc/kubernetes/ome-scheduler/config.yaml
      - --v=2
      - --bind-address=0.0.0.0
      - --secure-port=10259
    ports:
      - name: https-metrics
        containerPort: 10259
        protocol: TCP
    livenessProbe:
      httpGet:
        path: /healthz
        port: https-metrics
        scheme: HTTPS
      initialDelaySeconds: 15
      periodSeconds: 20
    readinessProbe:
      httpGet:
        path: /readyz
        port: https-metrics
        scheme: HTTPS
      initialDelaySeconds: 5
    resources:
      limits:
        cpu: "2"
        memory: 12Gi
      requests:
        cpu: 200m
        memory: 4Gi
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
      - name: config
        mountPath: /etc/kubernetes/ome-scheduler
        readOnly: true
volumes:
  - name: config
    configMap:
      name: ome-scheduler-config
`)
		for _, absent := range []string{"imagePullSecrets", "nodeSelector", "tolerations"} {
			if has(d.obj, "spec", "template", "spec", absent) {
				t.Errorf("pod spec has %s; want it omitted when empty", absent)
			}
		}
		wantContains(t, "Deployment text", d.text, "\n"+defaultResourcesBlock)
	})

	t.Run("checksum is sha256 of the rendered ConfigMap", func(t *testing.T) {
		cm := r.get(t, "ConfigMap", "ome-scheduler-config")
		// helm prints each document trimmed; the template output ends with one newline.
		want := sha256Hex(strings.TrimSpace(cm.text) + "\n")
		wantEq(t, "checksum/config", checksum(t, r, "ome-scheduler"), want)
	})

	t.Run("serviceaccount", func(t *testing.T) {
		sa := r.get(t, "ServiceAccount", "ome-scheduler")
		wantEq(t, "namespace", sa.namespace(), "ome")
	})

	t.Run("service", func(t *testing.T) {
		s := r.get(t, "Service", "ome-scheduler-metrics")
		wantEq(t, "namespace", s.namespace(), "ome")
		if has(s.obj, "metadata", "annotations") {
			t.Errorf("Service has annotations; want none by default")
		}
		wantYAML(t, "Service spec", s.obj["spec"], `
type: ClusterIP
selector:
  app.kubernetes.io/name: ome-scheduler
  app.kubernetes.io/component: scheduler
ports:
  - name: https-metrics
    port: 10259
    targetPort: https-metrics
    protocol: TCP
`)
		wantLine(t, "render", res.stdout, "  name: ome-scheduler-metrics")
	})

	t.Run("pdb", func(t *testing.T) {
		p := r.get(t, "PodDisruptionBudget", "ome-scheduler")
		wantEq(t, "apiVersion", p.obj["apiVersion"], "policy/v1")
		wantEq(t, "namespace", p.namespace(), "ome")
		wantYAML(t, "PDB spec", p.obj["spec"], `
minAvailable: 1
selector:
  matchLabels:
    app.kubernetes.io/name: ome-scheduler
    app.kubernetes.io/component: scheduler
`)
	})

	t.Run("W1 profile schedulerName", func(t *testing.T) {
		wantLine(t, "config.yaml", configYAML(t, r, "ome-scheduler"), "  - schedulerName: ome-scheduler")
	})
}

// ---------------------------------------------------------------------------------------
// §4.1 variations, §7.3, §7.4, §7.7

func TestConfigVariations(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want func(t *testing.T) string
		// extra raw-line checks on the ConfigMap text
		lines []string
	}{
		{
			name: "percentageOfNodesToScore 100",
			args: []string{"--set", "scheduler.percentageOfNodesToScore=100"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "  - schedulerName: ome-scheduler\n",
					"  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 100\n")
			},
			lines: []string{"        percentageOfNodesToScore: 100"},
		},
		{
			name: "percentageOfNodesToScore 1",
			args: []string{"--set", "scheduler.percentageOfNodesToScore=1"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "  - schedulerName: ome-scheduler\n",
					"  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 1\n")
			},
			lines: []string{"        percentageOfNodesToScore: 1"},
		},
		{
			name: "fallback topologyKey",
			args: []string{"--set", "scheduler.plugin.topologyKey=nvidia.com/gpu.clique"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "        args:\n          podGroupTopologyKeyAnnotation:",
					"        args:\n          topologyKey: \"nvidia.com/gpu.clique\"\n          podGroupTopologyKeyAnnotation:")
			},
			lines: []string{`              topologyKey: "nvidia.com/gpu.clique"`},
		},
		{
			name: "preemption enabled",
			args: []string{"--set", "scheduler.disablePreemption=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "        disabled:\n          - name: DefaultPreemption\n", "")
			},
		},
		{
			name: "PodTopologySpread score enabled",
			args: []string{"--set", "scheduler.disablePodTopologySpreadScore=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "        disabled:\n          - name: PodTopologySpread\n", "")
			},
		},
		{
			name: "no NodeResourcesFit resources",
			args: []string{"--set-json", "scheduler.nodeResourcesFit.resources=[]"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig,
					"            resources:\n              - name: cpu\n                weight: 1\n              - name: memory\n                weight: 1\n", "")
			},
		},
		{
			name: "accelerator resource weights (W34)",
			args: []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"nvidia.com/gpu","weight":10},{"name":"cpu","weight":1},{"name":"memory","weight":1}]`},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "            resources:\n",
					"            resources:\n              - name: nvidia.com/gpu\n                weight: 10\n")
			},
		},
		{
			name: "leaderElect false with one replica",
			args: []string{"--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=0"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "  leaderElect: true\n", "  leaderElect: false\n")
			},
			lines: []string{"      resourceName: ome-scheduler", "      resourceNamespace: ome"},
		},
		{
			name: "generic producer annotation (§7.7)",
			args: []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, `podGroupTopologyKeyAnnotation: "ome.io/topology-key"`, `podGroupTopologyKeyAnnotation: "example.com/topology-key"`)
			},
			lines: []string{`              podGroupTopologyKeyAnnotation: "example.com/topology-key"`},
		},
		{
			name: "placement-group check disabled",
			args: []string{"--set", "scheduler.plugin.unsupportedPlacementGroupLabel="},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, `unsupportedPlacementGroupLabel: "ome.io/placement-group"`, `unsupportedPlacementGroupLabel: ""`)
			},
		},
		{
			name: "integer and boolean args bare",
			args: []string{
				"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=120",
				"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=15",
				"--set", "scheduler.plugin.gcIntervalSeconds=5",
				"--set", "scheduler.plugin.standaloneDomainPacking=false",
				"--set", "scheduler.omeGangPack.scoreWeight=1000000",
				"--set", "scheduler.nodeResourcesFit.scoreWeight=3",
			},
			want: func(t *testing.T) string {
				s := replaceOnce(t, defaultConfig, "defaultPermitTimeoutSeconds: 600", "defaultPermitTimeoutSeconds: 120")
				s = replaceOnce(t, s, "podGroupSyncTimeoutSeconds: 30", "podGroupSyncTimeoutSeconds: 15")
				s = replaceOnce(t, s, "gcIntervalSeconds: 60", "gcIntervalSeconds: 5")
				s = replaceOnce(t, s, "standaloneDomainPacking: true", "standaloneDomainPacking: false")
				s = replaceOnce(t, s, "          - name: OMEGangPack\n            weight: 10\n", "          - name: OMEGangPack\n            weight: 1000000\n")
				return replaceOnce(t, s, "          - name: NodeResourcesFit\n            weight: 10\n", "          - name: NodeResourcesFit\n            weight: 3\n")
			},
		},
		{
			name: "gangSoftSpread false is rendered, true is not",
			args: []string{"--set", "scheduler.plugin.gangSoftSpread=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig, "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          gangSoftSpread: false\n")
			},
		},
		{
			name: "integers from a values file stay integers",
			args: []string{"-f", "VALUES:scheduler:\n  omeGangPack:\n    scoreWeight: 1000000\n  percentageOfNodesToScore: 100\n"},
			want: func(t *testing.T) string {
				s := replaceOnce(t, defaultConfig, "          - name: OMEGangPack\n            weight: 10\n", "          - name: OMEGangPack\n            weight: 1000000\n")
				return replaceOnce(t, s, "  - schedulerName: ome-scheduler\n", "  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 100\n")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if v, ok := strings.CutPrefix(a, "VALUES:"); ok {
					a = writeValues(t, v)
				}
				args[i] = a
			}
			r := render(t, args...)
			got := configYAML(t, r, "ome-scheduler")
			want := tc.want(t)
			if got != want {
				t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, want)
			}
			cm := r.get(t, "ConfigMap", "ome-scheduler-config")
			for _, l := range tc.lines {
				wantLine(t, "ConfigMap", cm.text, l)
			}
		})
	}
}

// ---------------------------------------------------------------------------------------
// §3 refusals (§7.6)

func TestRenderRefusals(t *testing.T) {
	const (
		msgLeader = "scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1"
		msgAnnot  = "scheduler.plugin.podGroupTopologyKeyAnnotation must be ome.io/topology-key when scheduler.omeControllerIntegration.enabled is true; disable OME controller integration for generic producers"
		msgPDB    = "scheduler.podDisruptionBudget.minAvailable must be less than scheduler.replicaCount so voluntary maintenance can make progress"
		msgSM     = "scheduler.metrics.serviceMonitor.enabled requires scheduler.metrics.service.enabled \u2014 the ServiceMonitor selects the metrics Service"
	)
	cases := []struct {
		name     string
		args     []string
		template string
		msg      string
	}{
		{"replicaCount 2 without leader election (W9)", []string{"--set", "scheduler.replicaCount=2", "--set", "scheduler.leaderElect=false"}, "deployment.yaml", msgLeader},
		{"replicaCount 3 without leader election", []string{"--set", "scheduler.replicaCount=3", "--set", "scheduler.leaderElect=false"}, "deployment.yaml", msgLeader},
		{"foreign annotation with OME integration", []string{"--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"}, "deployment.yaml", msgAnnot},
		{"replicaCount 1 with minAvailable 1", []string{"--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=1"}, "pdb.yaml", msgPDB},
		{"replicaCount 1 only (W8)", []string{"--set", "scheduler.replicaCount=1"}, "pdb.yaml", msgPDB},
		{"minAvailable above replicaCount", []string{"--set", "scheduler.replicaCount=3", "--set", "scheduler.podDisruptionBudget.minAvailable=5"}, "pdb.yaml", msgPDB},
		{"ServiceMonitor without Service (W43)", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set", "scheduler.metrics.service.enabled=false"}, "servicemonitor.yaml", msgSM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err == nil {
				t.Fatalf("render succeeded; want failure %q", tc.msg)
			}
			found := false
			for _, l := range lines(res.stderr) {
				if strings.HasSuffix(l, "): "+tc.msg) && strings.Contains(l, "templates/"+tc.template) {
					found = true
				}
			}
			if !found {
				t.Errorf("stderr lacks a line from templates/%s ending with %q:\n%s", tc.template, tc.msg, res.stderr)
			}
		})
	}
	t.Run("ServiceMonitor message uses an em dash", func(t *testing.T) {
		if !strings.Contains(msgSM, "\u2014") || strings.Contains(msgSM, " - the") {
			t.Fatal("test constant lost its em dash")
		}
	})
}

// ---------------------------------------------------------------------------------------
// §2 schema (§7.3, §7.6) and kubeVersion

func TestSchemaRejections(t *testing.T) {
	const schemaErr = "values don't meet the specifications of the schema"
	cases := []struct {
		name   string
		args   []string
		path   string // JSON pointer named in Helm's schema error
		detail string // optional further text of the schema error
	}{
		{"percentageOfNodesToScore 0", []string{"--set", "scheduler.percentageOfNodesToScore=0"}, "/scheduler/percentageOfNodesToScore", "minimum: got 0, want 1"},
		{"percentageOfNodesToScore 101", []string{"--set", "scheduler.percentageOfNodesToScore=101"}, "/scheduler/percentageOfNodesToScore", "maximum: got 101, want 100"},
		{"percentageOfNodesToScore string", []string{"--set-string", "scheduler.percentageOfNodesToScore=50"}, "/scheduler/percentageOfNodesToScore", ""},
		{"name Invalid_Name", []string{"--set", "scheduler.name=Invalid_Name"}, "/scheduler/name", "does not match pattern"},
		{"name of 56 characters", []string{"--set", "scheduler.name=" + strings.Repeat("a", 56)}, "/scheduler/name", "maxLength"},
		{"name ending with a dash", []string{"--set", "scheduler.name=ome-"}, "/scheduler/name", ""},
		{"empty name", []string{"--set", "scheduler.name="}, "/scheduler/name", ""},
		{"replicaCount 0", []string{"--set", "scheduler.replicaCount=0"}, "/scheduler/replicaCount", ""},
		{"leaderElect not boolean", []string{"--set-string", "scheduler.leaderElect=true"}, "/scheduler/leaderElect", ""},
		{"integration enabled not boolean", []string{"--set-string", "scheduler.omeControllerIntegration.enabled=yes"}, "/scheduler/omeControllerIntegration/enabled", ""},
		{"integration without enabled", []string{"--set", "scheduler.omeControllerIntegration.enabled=null"}, "/scheduler/omeControllerIntegration", "missing property 'enabled'"},
		{"strategy Recreate", []string{"--set", "scheduler.deploymentStrategy.type=Recreate"}, "/scheduler/deploymentStrategy/type", ""},
		{"maxSurge negative", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxSurge=-1"}, "/scheduler/deploymentStrategy/rollingUpdate/maxSurge", ""},
		{"maxUnavailable negative", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxUnavailable=-1"}, "/scheduler/deploymentStrategy/rollingUpdate/maxUnavailable", ""},
		{"topologyKey removed", []string{"--set", "scheduler.plugin.topologyKey=null"}, "/scheduler/plugin", "missing property 'topologyKey'"},
		{"topologyKey not a string", []string{"--set", "scheduler.plugin.topologyKey=5"}, "/scheduler/plugin/topologyKey", ""},
		{"empty annotation name", []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation="}, "/scheduler/plugin/podGroupTopologyKeyAnnotation", ""},
		{"defaultPermitTimeoutSeconds 0", []string{"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=0"}, "/scheduler/plugin/defaultPermitTimeoutSeconds", ""},
		{"podGroupSyncTimeoutSeconds 0", []string{"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=0"}, "/scheduler/plugin/podGroupSyncTimeoutSeconds", ""},
		{"gcIntervalSeconds 0", []string{"--set", "scheduler.plugin.gcIntervalSeconds=0"}, "/scheduler/plugin/gcIntervalSeconds", "minimum: got 0, want 1"},
		{"standaloneDomainPacking not boolean", []string{"--set-string", "scheduler.plugin.standaloneDomainPacking=false"}, "/scheduler/plugin/standaloneDomainPacking", ""},
		{"OMEGangPack weight 0", []string{"--set", "scheduler.omeGangPack.scoreWeight=0"}, "/scheduler/omeGangPack/scoreWeight", ""},
		{"OMEGangPack weight 1000001", []string{"--set", "scheduler.omeGangPack.scoreWeight=1000001"}, "/scheduler/omeGangPack/scoreWeight", ""},
		{"NodeResourcesFit score weight 0", []string{"--set", "scheduler.nodeResourcesFit.scoreWeight=0"}, "/scheduler/nodeResourcesFit/scoreWeight", ""},
		{"NodeResourcesFit resource weight 101 (W34)", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"nvidia.com/gpu","weight":101}]`}, "/scheduler/nodeResourcesFit/resources/0/weight", "maximum: got 101, want 100"},
		{"NodeResourcesFit resource weight 0", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":0}]`}, "/scheduler/nodeResourcesFit/resources/0/weight", ""},
		{"NodeResourcesFit resource without name", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"","weight":1}]`}, "/scheduler/nodeResourcesFit/resources/0/name", ""},
		{"empty bindAddress", []string{"--set", "scheduler.metrics.bindAddress="}, "/scheduler/metrics/bindAddress", ""},
		{"securePort 0", []string{"--set", "scheduler.metrics.securePort=0"}, "/scheduler/metrics/securePort", ""},
		{"securePort 65536", []string{"--set", "scheduler.metrics.securePort=65536"}, "/scheduler/metrics/securePort", ""},
		{"service type ExternalName", []string{"--set", "scheduler.metrics.service.type=ExternalName"}, "/scheduler/metrics/service/type", ""},
		{"service port 70000", []string{"--set", "scheduler.metrics.service.port=70000"}, "/scheduler/metrics/service/port", ""},
		{"service enabled not boolean", []string{"--set-string", "scheduler.metrics.service.enabled=true"}, "/scheduler/metrics/service/enabled", ""},
		{"liveness path without slash", []string{"--set", "scheduler.probes.liveness.path=healthz"}, "/scheduler/probes/liveness/path", ""},
		{"readiness path without slash", []string{"--set", "scheduler.probes.readiness.path=readyz"}, "/scheduler/probes/readiness/path", ""},
		{"liveness initialDelaySeconds negative", []string{"--set", "scheduler.probes.liveness.initialDelaySeconds=-1"}, "/scheduler/probes/liveness/initialDelaySeconds", ""},
		{"liveness periodSeconds 0", []string{"--set", "scheduler.probes.liveness.periodSeconds=0"}, "/scheduler/probes/liveness/periodSeconds", ""},
		{"readiness initialDelaySeconds negative", []string{"--set", "scheduler.probes.readiness.initialDelaySeconds=-1"}, "/scheduler/probes/readiness/initialDelaySeconds", ""},
		{"PDB enabled not boolean", []string{"--set-string", "scheduler.podDisruptionBudget.enabled=true"}, "/scheduler/podDisruptionBudget/enabled", ""},
		{"PDB minAvailable negative", []string{"--set", "scheduler.podDisruptionBudget.minAvailable=-1"}, "/scheduler/podDisruptionBudget/minAvailable", ""},
		{"affinity not an object", []string{"--set-json", `scheduler.affinity=[]`}, "/scheduler/affinity", ""},
		{"topologySpreadConstraints items not objects", []string{"--set-json", `scheduler.topologySpreadConstraints=["x"]`}, "/scheduler/topologySpreadConstraints/0", ""},
		{"scheduler removed", []string{"--set", "scheduler=null"}, "", "missing property 'scheduler'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err == nil {
				t.Fatalf("render succeeded; want a schema failure at %s", tc.path)
			}
			wantContains(t, "stderr", res.stderr, schemaErr)
			if tc.path != "" {
				wantContains(t, "stderr", res.stderr, "- at '"+tc.path+"'")
			}
			if tc.detail != "" {
				wantContains(t, "stderr", res.stderr, tc.detail)
			}
		})
	}

	kube := []struct{ version string }{{"1.34.99"}, {"1.36.0"}, {"1.34.0"}, {"1.37.0"}}
	for _, tc := range kube {
		t.Run("kube version "+tc.version, func(t *testing.T) {
			t.Parallel()
			res := templateKube(t, tc.version, releaseNS)
			if res.err == nil {
				t.Fatalf("render for Kubernetes %s succeeded; want a kubeVersion refusal", tc.version)
			}
			wantContains(t, "stderr", res.stderr, "chart requires kubeVersion: >=1.35.0-0 <1.36.0-0 which is incompatible with Kubernetes v"+tc.version)
		})
	}
}

func TestSchemaAccepts(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"kube 1.35.9", []string{"--kube-version", "1.35.9"}},
		{"name of 55 characters", []string{"--set", "scheduler.name=" + strings.Repeat("a", 55)}},
		{"one-character name", []string{"--set", "scheduler.name=x"}},
		{"percentage null", []string{"--set", "scheduler.percentageOfNodesToScore=null"}},
		{"maxUnavailable as a percentage", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxUnavailable=50%"}},
		{"weights at their maxima", []string{"--set", "scheduler.omeGangPack.scoreWeight=1000000", "--set", "scheduler.nodeResourcesFit.scoreWeight=1000000", "--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":100}]`}},
		{"ports at the maximum", []string{"--set", "scheduler.metrics.securePort=65535", "--set", "scheduler.metrics.service.port=65535"}},
		{"service types", []string{"--set", "scheduler.metrics.service.type=LoadBalancer"}},
		{"unknown keys are allowed", []string{"--set", "scheduler.somethingNew=1", "--set", "scheduler.plugin.future=x", "--set", "extra.key=1"}},
		{"replicaCount 1 with minAvailable 0 (§7.7)", []string{"--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err != nil {
				t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
			}
			r := parseRender(t, res.stdout)
			if len(r.ofKind("Deployment")) != 1 {
				t.Errorf("want one Deployment, got objects %v", r.ids())
			}
		})
	}
}

// ---------------------------------------------------------------------------------------
// §7.4 – §7.11 render variants

func TestRenderVariants(t *testing.T) {
	t.Run("custom memory (§7.4)", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.resources.requests.memory=1Gi", "--set", "scheduler.resources.limits.memory=2Gi")
		d := r.get(t, "Deployment", "ome-scheduler")
		wantYAML(t, "resources", dig(d.obj, "spec", "template", "spec", "containers", 0, "resources"), `
limits:
  cpu: "2"
  memory: 2Gi
requests:
  cpu: 200m
  memory: 1Gi
`)
		wantContains(t, "Deployment", d.text, "        resources:\n          limits:\n            cpu: \"2\"\n            memory: 2Gi\n          requests:\n            cpu: 200m\n            memory: 1Gi\n")
	})

	t.Run("one replica, no Service, no PDB (§7.8, W7)", func(t *testing.T) {
		t.Parallel()
		res := template(t, "--set", "scheduler.replicaCount=1", "--set", "scheduler.metrics.service.enabled=false", "--set", "scheduler.podDisruptionBudget.enabled=false")
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantNotContains(t, "render", res.stdout, "kind: PodDisruptionBudget")
		wantNoLine(t, "render", res.stdout, "  name: ome-scheduler-metrics")
		r := parseRender(t, res.stdout)
		if n := len(r.ofKind("Service")) + len(r.ofKind("PodDisruptionBudget")); n != 0 {
			t.Errorf("render has %d Service/PDB objects, want 0", n)
		}
		wantYAML(t, "replicas", dig(r.get(t, "Deployment", "ome-scheduler").obj, "spec", "replicas"), "1")
	})

	t.Run("one replica with minAvailable 0 (§7.7)", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=0")
		p := r.get(t, "PodDisruptionBudget", "ome-scheduler")
		wantYAML(t, "minAvailable", dig(p.obj, "spec", "minAvailable"), "0")
	})

	t.Run("no auth delegation, no reader (§7.9)", func(t *testing.T) {
		t.Parallel()
		res := template(t, "--set", "scheduler.metrics.authDelegation.enabled=false", "--set", "scheduler.metrics.reader.create=false",
			"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"collector","namespace":"telemetry"}]`)
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantNotContains(t, "render", res.stdout, "system:auth-delegator")
		wantNotContains(t, "render", res.stdout, "ome-scheduler-metrics-reader")
		wantNotContains(t, "render", res.stdout, "ome-scheduler-auth-delegator")
	})

	t.Run("metrics reader without scrapers (§7.10)", func(t *testing.T) {
		t.Parallel()
		r := render(t)
		wantEq(t, "objects named ome-scheduler-metrics-reader", r.count("", "ome-scheduler-metrics-reader"), 1)
		r.get(t, "ClusterRole", "ome-scheduler-metrics-reader")
	})

	t.Run("metrics reader with scrapers (§7.10)", func(t *testing.T) {
		t.Parallel()
		res := template(t, "--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"collector","namespace":"telemetry"}]`)
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantContains(t, "render", res.stdout, "name: collector")
		wantContains(t, "render", res.stdout, "namespace: telemetry")
		r := parseRender(t, res.stdout)
		wantEq(t, "objects named ome-scheduler-metrics-reader", r.count("", "ome-scheduler-metrics-reader"), 2)
		b := r.get(t, "ClusterRoleBinding", "ome-scheduler-metrics-reader")
		wantYAML(t, "reader binding", map[string]any{"roleRef": b.obj["roleRef"], "subjects": b.obj["subjects"]}, `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ome-scheduler-metrics-reader
subjects:
  - kind: ServiceAccount
    name: collector
    namespace: telemetry
`)
	})

	t.Run("ServiceMonitor (§7.11, W38)", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set", "scheduler.metrics.serviceMonitor.additionalLabels.release=kube-prometheus")
		sm := r.get(t, "ServiceMonitor", "ome-scheduler")
		wantEq(t, "apiVersion", sm.obj["apiVersion"], "monitoring.coreos.com/v1")
		wantEq(t, "namespace", sm.namespace(), "ome")
		labels := expectedLabels(t)
		labels["release"] = "kube-prometheus"
		wantEq(t, "ServiceMonitor labels", dig(sm.obj, "metadata", "labels"), labels)
		wantYAML(t, "ServiceMonitor spec", sm.obj["spec"], `
selector:
  matchLabels:
    app.kubernetes.io/name: ome-scheduler
    app.kubernetes.io/component: scheduler
namespaceSelector:
  matchNames: [ome]
endpoints:
  - port: https-metrics
    path: /metrics
    scheme: https
    interval: 30s
    scrapeTimeout: 10s
    bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    tlsConfig:
      insecureSkipVerify: true
`)
	})

	t.Run("ServiceMonitor off by default", func(t *testing.T) {
		t.Parallel()
		r := render(t)
		if n := len(r.ofKind("ServiceMonitor")); n != 0 {
			t.Errorf("default render has %d ServiceMonitors", n)
		}
	})

	t.Run("pull secrets fall back to global", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set-json", `global.imagePullSecrets=[{"name":"global-pull"}]`)
		wantYAML(t, "imagePullSecrets", dig(r.get(t, "Deployment", "ome-scheduler").obj, "spec", "template", "spec", "imagePullSecrets"), "[{name: global-pull}]")
	})

	t.Run("scheduler pull secrets win over global", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set-json", `global.imagePullSecrets=[{"name":"global-pull"}]`, "--set-json", `scheduler.imagePullSecrets=[{"name":"own-pull"}]`)
		wantYAML(t, "imagePullSecrets", dig(r.get(t, "Deployment", "ome-scheduler").obj, "spec", "template", "spec", "imagePullSecrets"), "[{name: own-pull}]")
	})

	t.Run("release namespace propagates", func(t *testing.T) {
		t.Parallel()
		r := renderNS(t, "schedulers")
		for _, d := range r.docs {
			switch d.kind() {
			case "ClusterRole", "ClusterRoleBinding":
				if d.namespace() != "" {
					t.Errorf("%s/%s is cluster-scoped but has namespace %q", d.kind(), d.name(), d.namespace())
				}
			case "RoleBinding":
				wantEq(t, "RoleBinding namespace", d.namespace(), "kube-system")
			default:
				wantEq(t, d.kind()+" namespace", d.namespace(), "schedulers")
			}
			if subj, ok := d.obj["subjects"].([]any); ok {
				wantEq(t, d.name()+" subject namespace", dig(subj, 0, "namespace"), "schedulers")
			}
		}
		wantLine(t, "config.yaml", configYAML(t, r, "ome-scheduler"), "  resourceNamespace: schedulers")
	})
}

// ---------------------------------------------------------------------------------------
// W1 image reference

func TestImageReference(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, "ome-scheduler:latest"},
		{"hub and tag (W1)", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"hub with trailing slash", []string{"--set", "global.hub=registry.example.com/ome/", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"repository with a slash ignores hub", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.repository=quay.io/acme/ome-scheduler", "--set", "scheduler.image.tag=v1.3.0"}, "quay.io/acme/ome-scheduler:v1.3.0"},
		{"repository with a slash without hub", []string{"--set", "scheduler.image.repository=ghcr.io/acme/sched"}, "ghcr.io/acme/sched:latest"},
		{"numeric-looking tag", []string{"-f", "VALUES:scheduler:\n  image:\n    tag: 1.30\n"}, "ome-scheduler:1.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if v, ok := strings.CutPrefix(a, "VALUES:"); ok {
					a = writeValues(t, v)
				}
				args[i] = a
			}
			r := render(t, args...)
			d := r.get(t, "Deployment", "ome-scheduler")
			wantEq(t, "image", dig(d.obj, "spec", "template", "spec", "containers", 0, "image"), tc.want)
		})
	}
	t.Run("W1 values file from the walkthrough", func(t *testing.T) {
		t.Parallel()
		f := writeValues(t, "global:\n  hub: registry.example.com/ome\nscheduler:\n  image:\n    tag: v1.3.0\n")
		res := template(t, "-f", f)
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantLine(t, "render", res.stdout, "        image: registry.example.com/ome/ome-scheduler:v1.3.0")
		wantLine(t, "render", res.stdout, "      - schedulerName: ome-scheduler")
	})
}

// ---------------------------------------------------------------------------------------
// §6 / §7.12 checksum-driven rollout

func TestChecksum(t *testing.T) {
	base := checksum(t, render(t), "ome-scheduler")
	changes := []struct {
		name string
		args []string
	}{
		{"topologyKey", []string{"--set", "scheduler.plugin.topologyKey=nvidia.com/gpu.clique"}},
		{"podGroupTopologyKeyAnnotation", []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"}},
		{"unsupportedPlacementGroupLabel", []string{"--set", "scheduler.plugin.unsupportedPlacementGroupLabel=example.com/pg"}},
		{"defaultPermitTimeoutSeconds", []string{"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=120"}},
		{"podGroupSyncTimeoutSeconds", []string{"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=31"}},
		{"gcIntervalSeconds", []string{"--set", "scheduler.plugin.gcIntervalSeconds=61"}},
		{"standaloneDomainPacking", []string{"--set", "scheduler.plugin.standaloneDomainPacking=false"}},
		{"OMEGangPack weight", []string{"--set", "scheduler.omeGangPack.scoreWeight=11"}},
		{"NodeResourcesFit weight", []string{"--set", "scheduler.nodeResourcesFit.scoreWeight=11"}},
		{"NodeResourcesFit resources", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":2},{"name":"memory","weight":1}]`}},
		{"percentageOfNodesToScore", []string{"--set", "scheduler.percentageOfNodesToScore=100"}},
		{"preemption switch", []string{"--set", "scheduler.disablePreemption=false"}},
		{"PodTopologySpread score switch", []string{"--set", "scheduler.disablePodTopologySpreadScore=false"}},
		{"leaderElect", []string{"--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.enabled=false"}},
	}
	for _, tc := range changes {
		t.Run("changes with "+tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, tc.args...)
			got := checksum(t, r, "ome-scheduler")
			if got == base {
				t.Errorf("checksum/config unchanged (%s) after changing %s", got, tc.name)
			}
			cm := r.get(t, "ConfigMap", "ome-scheduler-config")
			wantEq(t, "checksum/config", got, sha256Hex(strings.TrimSpace(cm.text)+"\n"))
		})
	}
	same := []struct {
		name string
		args []string
	}{
		{"podAnnotations", []string{"--set", "scheduler.podAnnotations.example\\.com/team=sched"}},
		{"verbosity", []string{"--set", "scheduler.verbosity=4"}},
		{"resources", []string{"--set", "scheduler.resources.requests.memory=1Gi"}},
		{"replicaCount", []string{"--set", "scheduler.replicaCount=3"}},
	}
	for _, tc := range same {
		t.Run("unchanged with "+tc.name, func(t *testing.T) {
			t.Parallel()
			got := checksum(t, render(t, tc.args...), "ome-scheduler")
			if got != base {
				t.Errorf("checksum/config changed (%s → %s) after changing only %s", base, got, tc.name)
			}
		})
	}
	t.Run("podAnnotations follow checksum", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.podAnnotations.example\\.com/team=sched", "--set", "scheduler.podAnnotations.checksum/config=override")
		d := r.get(t, "Deployment", "ome-scheduler")
		wantEq(t, "pod annotations", dig(d.obj, "spec", "template", "metadata", "annotations"), map[string]any{
			"checksum/config":  base,
			"example.com/team": "sched",
		})
		re := regexp.MustCompile(`(?m)^      annotations:\n        checksum/config: [0-9a-f]{64}\n        example\.com/team: sched\n`)
		if !re.MatchString(d.text) {
			t.Errorf("podAnnotations are not rendered directly after checksum/config:\n%s", d.text)
		}
	})
}

// ---------------------------------------------------------------------------------------
// Every value changed

const allValuesA = `
global:
  hub: registry.example.com/ome
  imagePullSecrets:
    - name: global-pull
scheduler:
  name: gang-sched
  image:
    repository: custom-scheduler
    tag: v9.9.9
    pullPolicy: Always
  imagePullSecrets:
    - name: sched-pull
  replicaCount: 3
  leaderElect: true
  omeControllerIntegration:
    enabled: true
  deploymentStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 2
      maxSurge: "25%"
  verbosity: 4
  disablePreemption: true
  disablePodTopologySpreadScore: true
  percentageOfNodesToScore: 42
  plugin:
    topologyKey: nvidia.com/gpu.clique
    podGroupTopologyKeyAnnotation: ome.io/topology-key
    unsupportedPlacementGroupLabel: example.com/placement-group
    defaultPermitTimeoutSeconds: 120
    podGroupSyncTimeoutSeconds: 45
    gcIntervalSeconds: 90
    standaloneDomainPacking: false
    gangSoftSpread: false
  omeGangPack:
    scoreWeight: 1000000
  nodeResourcesFit:
    scoreWeight: 7
    resources:
      - name: nvidia.com/gpu
        weight: 10
      - name: cpu
        weight: 2
      - name: memory
        weight: 3
  metrics:
    bindAddress: 127.0.0.1
    securePort: 11259
    authDelegation:
      enabled: true
    reader:
      create: true
      serviceAccounts:
        - name: prometheus
          namespace: monitoring
        - name: collector
          namespace: telemetry
    service:
      enabled: true
      type: NodePort
      port: 9443
      annotations:
        example.com/scrape: "true"
    serviceMonitor:
      enabled: true
      interval: 15s
      scrapeTimeout: 5s
      additionalLabels:
        release: kube-prometheus
      tlsConfig:
        caFile: /etc/prometheus/ca.crt
        serverName: gang-sched-metrics
      relabelings:
        - sourceLabels: [__meta_kubernetes_pod_node_name]
          targetLabel: node
      metricRelabelings:
        - sourceLabels: [__name__]
          regex: go_.*
          action: drop
    grafanaDashboard:
      enabled: true
  probes:
    liveness:
      path: /livez
      initialDelaySeconds: 30
      periodSeconds: 10
    readiness:
      path: /ready
      initialDelaySeconds: 7
  podDisruptionBudget:
    enabled: true
    minAvailable: 2
  resources:
    requests:
      cpu: 100m
      memory: 1Gi
    limits:
      cpu: "1"
      memory: 2Gi
  nodeSelector:
    node-role.kubernetes.io/control-plane: ""
  affinity:
    podAntiAffinity: null
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - key: node-role.kubernetes.io/control-plane
                operator: Exists
  tolerations:
    - key: node-role.kubernetes.io/control-plane
      operator: Exists
      effect: NoSchedule
  topologySpreadConstraints:
    - maxSkew: 2
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector:
        matchLabels:
          app.kubernetes.io/name: ome-scheduler
  podAnnotations:
    example.com/team: scheduling
`

const allValuesAConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: gang-sched
  resourceNamespace: sched-system
profiles:
  - schedulerName: gang-sched
    percentageOfNodesToScore: 42
    plugins:
      multiPoint:
        enabled:
          - name: OMEGangPack
        disabled:
          - name: DefaultPreemption
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 7
          - name: OMEGangPack
            weight: 1000000
        disabled:
          - name: PodTopologySpread
    pluginConfig:
      - name: OMEGangPack
        args:
          topologyKey: "nvidia.com/gpu.clique"
          podGroupTopologyKeyAnnotation: "ome.io/topology-key"
          unsupportedPlacementGroupLabel: "example.com/placement-group"
          defaultPermitTimeoutSeconds: 120
          podGroupSyncTimeoutSeconds: 45
          gcIntervalSeconds: 90
          standaloneDomainPacking: false
          gangSoftSpread: false
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: nvidia.com/gpu
                weight: 10
              - name: cpu
                weight: 2
              - name: memory
                weight: 3
`

// allValuesB turns off every switch the A file keeps on.
const allValuesB = `
global:
  imagePullSecrets:
    - name: global-pull
scheduler:
  replicaCount: 1
  leaderElect: false
  omeControllerIntegration:
    enabled: false
  disablePreemption: false
  disablePodTopologySpreadScore: false
  plugin:
    podGroupTopologyKeyAnnotation: example.com/topology-key
    unsupportedPlacementGroupLabel: ""
  nodeResourcesFit:
    resources: []
  metrics:
    authDelegation:
      enabled: false
    reader:
      create: false
    service:
      enabled: false
  podDisruptionBudget:
    enabled: false
  resources: null
  affinity: null
  topologySpreadConstraints: []
`

const allValuesBConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
  resourceName: ome-scheduler
  resourceNamespace: ome
profiles:
  - schedulerName: ome-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: OMEGangPack
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 10
          - name: OMEGangPack
            weight: 10
    pluginConfig:
      - name: OMEGangPack
        args:
          podGroupTopologyKeyAnnotation: "example.com/topology-key"
          unsupportedPlacementGroupLabel: ""
          defaultPermitTimeoutSeconds: 600
          podGroupSyncTimeoutSeconds: 30
          gcIntervalSeconds: 60
          standaloneDomainPacking: true
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
`

func TestAllValuesChanged(t *testing.T) {
	t.Run("A: every value changed in place", func(t *testing.T) {
		t.Parallel()
		r := renderNS(t, "sched-system", "-f", writeValues(t, allValuesA))
		const name = "gang-sched"

		wantEq(t, "objects", r.ids(), []string{
			"ClusterRole/gang-sched-extras",
			"ClusterRole/gang-sched-metrics-reader",
			"ClusterRoleBinding/gang-sched-auth-delegator",
			"ClusterRoleBinding/gang-sched-extras",
			"ClusterRoleBinding/gang-sched-metrics-reader",
			"ClusterRoleBinding/gang-sched-system-scheduler",
			"ClusterRoleBinding/gang-sched-system-volume-scheduler",
			"ConfigMap/gang-sched-config@sched-system",
			"ConfigMap/gang-sched-grafana-dashboard@sched-system",
			"Deployment/gang-sched@sched-system",
			"PodDisruptionBudget/gang-sched@sched-system",
			"RoleBinding/gang-sched-extension-apiserver-authentication-reader@kube-system",
			"Service/gang-sched-metrics@sched-system",
			"ServiceAccount/gang-sched@sched-system",
			"ServiceMonitor/gang-sched@sched-system",
		})

		if got := configYAML(t, r, name); got != allValuesAConfig {
			t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, allValuesAConfig)
		}
		wantLine(t, "ConfigMap", r.get(t, "ConfigMap", name+"-config").text, "        percentageOfNodesToScore: 42")

		d := r.get(t, "Deployment", name)
		wantYAML(t, "replicas", dig(d.obj, "spec", "replicas"), "3")
		wantYAML(t, "strategy", dig(d.obj, "spec", "strategy"), `{type: RollingUpdate, rollingUpdate: {maxUnavailable: 2, maxSurge: "25%"}}`)
		wantEq(t, "selector", dig(d.obj, "spec", "selector", "matchLabels"), selectorLabels)
		ann := dig(d.obj, "spec", "template", "metadata", "annotations").(map[string]any)
		wantEq(t, "podAnnotations", ann["example.com/team"], "scheduling")
		wantEq(t, "annotation count", len(ann), 2)
		wantYAML(t, "pod spec", dig(d.obj, "spec", "template", "spec"), `
serviceAccountName: gang-sched
imagePullSecrets:
  - name: sched-pull
securityContext:
  runAsNonRoot: true
  seccompProfile:
    type: RuntimeDefault
nodeSelector:
  node-role.kubernetes.io/control-plane: ""
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: node-role.kubernetes.io/control-plane
              operator: Exists
tolerations:
  - key: node-role.kubernetes.io/control-plane
    operator: Exists
    effect: NoSchedule
topologySpreadConstraints:
  - maxSkew: 2
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector:
      matchLabels:
        app.kubernetes.io/name: ome-scheduler
containers:
  - name: scheduler
    image: registry.example.com/ome/custom-scheduler:v9.9.9
    imagePullPolicy: Always
    command: ["/ome-scheduler"]
    args:
      - --config=/etc/kubernetes/ome-scheduler/config.yaml
      - --v=4
      - --bind-address=127.0.0.1
      - --secure-port=11259
    ports:
      - name: https-metrics
        containerPort: 11259
        protocol: TCP
    livenessProbe:
      httpGet:
        path: /livez
        port: https-metrics
        scheme: HTTPS
      initialDelaySeconds: 30
      periodSeconds: 10
    readinessProbe:
      httpGet:
        path: /ready
        port: https-metrics
        scheme: HTTPS
      initialDelaySeconds: 7
    resources:
      limits:
        cpu: "1"
        memory: 2Gi
      requests:
        cpu: 100m
        memory: 1Gi
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
      - name: config
        mountPath: /etc/kubernetes/ome-scheduler
        readOnly: true
volumes:
  - name: config
    configMap:
      name: gang-sched-config
`)
		wantContains(t, "Deployment text (keys sorted)", d.text, "\n        resources:\n          limits:\n            cpu: \"1\"\n            memory: 2Gi\n          requests:\n")

		s := r.get(t, "Service", name+"-metrics")
		wantYAML(t, "Service annotations", dig(s.obj, "metadata", "annotations"), `{example.com/scrape: "true"}`)
		wantYAML(t, "Service spec", s.obj["spec"], `
type: NodePort
selector:
  app.kubernetes.io/name: ome-scheduler
  app.kubernetes.io/component: scheduler
ports:
  - name: https-metrics
    port: 9443
    targetPort: https-metrics
    protocol: TCP
`)

		wantYAML(t, "PDB minAvailable", dig(r.get(t, "PodDisruptionBudget", name).obj, "spec", "minAvailable"), "2")

		sm := r.get(t, "ServiceMonitor", name)
		labels := expectedLabels(t)
		labels["release"] = "kube-prometheus"
		wantEq(t, "ServiceMonitor labels", dig(sm.obj, "metadata", "labels"), labels)
		wantYAML(t, "ServiceMonitor spec", sm.obj["spec"], `
selector:
  matchLabels:
    app.kubernetes.io/name: ome-scheduler
    app.kubernetes.io/component: scheduler
namespaceSelector:
  matchNames: [sched-system]
endpoints:
  - port: https-metrics
    path: /metrics
    scheme: https
    interval: 15s
    scrapeTimeout: 5s
    bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    tlsConfig:
      caFile: /etc/prometheus/ca.crt
      serverName: gang-sched-metrics
    relabelings:
      - sourceLabels: [__meta_kubernetes_pod_node_name]
        targetLabel: node
    metricRelabelings:
      - sourceLabels: [__name__]
        regex: go_.*
        action: drop
`)

		subject := `[{kind: ServiceAccount, name: gang-sched, namespace: sched-system}]`
		for _, b := range []struct{ name, kind, ref string }{
			{name + "-system-scheduler", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:kube-scheduler}"},
			{name + "-system-volume-scheduler", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:volume-scheduler}"},
			{name + "-extras", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gang-sched-extras}"},
			{name + "-extension-apiserver-authentication-reader", "RoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}"},
			{name + "-auth-delegator", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}"},
		} {
			o := r.get(t, b.kind, b.name)
			wantYAML(t, b.name+" roleRef", o.obj["roleRef"], b.ref)
			wantYAML(t, b.name+" subjects", o.obj["subjects"], subject)
		}
		wantYAML(t, "extras rules", r.get(t, "ClusterRole", name+"-extras").obj["rules"], `
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["gang-sched"]
  verbs: ["get", "update"]
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch"]
`)
		mr := r.get(t, "ClusterRoleBinding", name+"-metrics-reader")
		wantYAML(t, "metrics-reader roleRef", mr.obj["roleRef"], "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gang-sched-metrics-reader}")
		wantYAML(t, "metrics-reader subjects", mr.obj["subjects"], `
- {kind: ServiceAccount, name: prometheus, namespace: monitoring}
- {kind: ServiceAccount, name: collector, namespace: telemetry}
`)
		for _, o := range r.docs {
			wantEq(t, o.kind()+"/"+o.name()+" labels app.kubernetes.io/name", dig(o.obj, "metadata", "labels", "app.kubernetes.io/name"), "ome-scheduler")
		}
	})

	t.Run("B: every switch turned off", func(t *testing.T) {
		t.Parallel()
		res := template(t, "-f", writeValues(t, allValuesB))
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		r := parseRender(t, res.stdout)
		wantEq(t, "objects", r.ids(), []string{
			"ClusterRole/ome-scheduler-extras",
			"ClusterRoleBinding/ome-scheduler-extras",
			"ClusterRoleBinding/ome-scheduler-system-scheduler",
			"ClusterRoleBinding/ome-scheduler-system-volume-scheduler",
			"ConfigMap/ome-scheduler-config@ome",
			"Deployment/ome-scheduler@ome",
			"RoleBinding/ome-scheduler-extension-apiserver-authentication-reader@kube-system",
			"ServiceAccount/ome-scheduler@ome",
		})
		if got := configYAML(t, r, "ome-scheduler"); got != allValuesBConfig {
			t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, allValuesBConfig)
		}
		d := r.get(t, "Deployment", "ome-scheduler")
		ps := dig(d.obj, "spec", "template", "spec")
		wantYAML(t, "imagePullSecrets", dig(ps, "imagePullSecrets"), "[{name: global-pull}]")
		for _, absent := range []string{"affinity", "topologySpreadConstraints", "nodeSelector", "tolerations"} {
			if has(ps, absent) {
				t.Errorf("pod spec has %s; want it omitted when empty", absent)
			}
		}
		if has(ps, "containers", 0, "resources") {
			t.Errorf("container has resources; want them omitted when empty")
		}
		wantYAML(t, "replicas", dig(d.obj, "spec", "replicas"), "1")
		wantNotContains(t, "render", res.stdout, "system:auth-delegator")
		wantNotContains(t, "render", res.stdout, "metrics-reader")
	})
}

// ---------------------------------------------------------------------------------------
// §5 RBAC

// forbiddenResources may never appear in a rule of a role the chart creates.
var forbiddenResources = map[string]bool{
	"pods": true, "nodes": true, "bindings": true, "pods/binding": true, "pods/status": true,
	"persistentvolumes": true, "persistentvolumeclaims": true, "events": true,
	"configmaps": true, "secrets": true, "podgroups/status": true,
	"resourceclaims": true, "resourceclaims/status": true, "resourceslices": true,
	"deviceclasses": true, "resourceclaimtemplates": true,
}

func strList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, i := range items {
		s, _ := i.(string)
		out = append(out, s)
	}
	return out
}

// rbacViolations lists every §5 must-not-grant breach in the rules of one role.
func rbacViolations(role string, rules []any, name string) []string {
	var v []string
	for i, ri := range rules {
		rule, _ := ri.(map[string]any)
		groups := strList(rule["apiGroups"])
		resources := strList(rule["resources"])
		verbs := strList(rule["verbs"])
		names := strList(rule["resourceNames"])
		urls := strList(rule["nonResourceURLs"])
		where := fmt.Sprintf("%s rule %d", role, i)
		for _, list := range [][]string{groups, resources, verbs, urls, names} {
			for _, s := range list {
				if strings.Contains(s, "*") {
					v = append(v, where+": wildcard "+s)
				}
			}
		}
		for _, res := range resources {
			if forbiddenResources[res] {
				v = append(v, where+": grants "+res)
			}
			if strings.HasPrefix(res, "podgroups") {
				if res != "podgroups" {
					v = append(v, where+": grants "+res)
				}
				for _, verb := range verbs {
					if verb != "get" && verb != "list" && verb != "watch" {
						v = append(v, where+": verb "+verb+" on podgroups")
					}
				}
			}
			if res == "leases" {
				for _, verb := range verbs {
					switch verb {
					case "create":
					case "get", "update":
						if len(names) != 1 || names[0] != name {
							v = append(v, where+": "+verb+" on leases not restricted to "+name)
						}
					default:
						v = append(v, where+": verb "+verb+" on leases")
					}
				}
			}
		}
	}
	return v
}

func TestRBAC(t *testing.T) {
	variants := []struct {
		name string
		args []string
		sub  string // scheduler name
	}{
		{"defaults", nil, "ome-scheduler"},
		{"everything on", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus","namespace":"monitoring"}]`, "--set", "scheduler.metrics.grafanaDashboard.enabled=true"}, "ome-scheduler"},
		{"renamed", []string{"--set", "scheduler.name=gangs"}, "gangs"},
	}
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err != nil {
				t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
			}
			r := parseRender(t, res.stdout)
			roles := append(r.ofKind("ClusterRole"), r.ofKind("Role")...)
			if len(roles) == 0 {
				t.Fatal("no roles rendered")
			}
			for _, role := range roles {
				rules, _ := role.obj["rules"].([]any)
				for _, msg := range rbacViolations(role.kind()+"/"+role.name(), rules, tc.sub) {
					t.Errorf("must-not-grant: %s", msg)
				}
			}
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, b := range r.ofKind(kind) {
					if ref, _ := dig(b.obj, "roleRef", "name").(string); ref == "cluster-admin" || ref == "admin" || ref == "edit" {
						t.Errorf("%s/%s binds %s", kind, b.name(), ref)
					}
					wantEq(t, b.name()+" roleRef.apiGroup", dig(b.obj, "roleRef", "apiGroup"), "rbac.authorization.k8s.io")
				}
			}
			wantYAML(t, "extras rules", r.get(t, "ClusterRole", tc.sub+"-extras").obj["rules"], `
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["`+tc.sub+`"]
  verbs: ["get", "update"]
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch"]
`)
			wantYAML(t, "metrics-reader rules", r.get(t, "ClusterRole", tc.sub+"-metrics-reader").obj["rules"], `
- nonResourceURLs: ["/metrics"]
  verbs: ["get"]
`)
			// §7.5 and flow style
			for _, s := range []string{
				"name: system:kube-scheduler",
				"name: system:volume-scheduler",
				"name: " + tc.sub + "-extras",
				`resources: ["podgroups"]`,
				"name: system:auth-delegator",
				"name: " + tc.sub + "-metrics-reader",
				`nonResourceURLs: ["/metrics"]`,
			} {
				wantContains(t, "render", res.stdout, s)
			}
			// Rules are rendered in flow style exactly as written in §5.
			for _, l := range []string{
				`  - apiGroups: ["coordination.k8s.io"]`,
				`    resources: ["leases"]`,
				`    verbs: ["create"]`,
				`    resourceNames: ["` + tc.sub + `"]`,
				`    verbs: ["get", "update"]`,
				`  - apiGroups: ["scheduling.x-k8s.io"]`,
				`    resources: ["podgroups"]`,
				`    verbs: ["get", "list", "watch"]`,
				`  - nonResourceURLs: ["/metrics"]`,
				`    verbs: ["get"]`,
			} {
				wantLine(t, "render", res.stdout, l)
			}
			for _, s := range []string{`resources: ["nodes"]`, `resources: ["pods"]`, `resources: ["persistentvolumeclaims", "persistentvolumes"]`, "cluster-admin", `"*"`} {
				wantNotContains(t, "render", res.stdout, s)
			}
		})
	}
}

// TestRBACCheckerDetectsViolations proves the must-not-grant checker can fail.
func TestRBACCheckerDetectsViolations(t *testing.T) {
	cases := []struct {
		name  string
		rules string
	}{
		{"pods", `[{apiGroups: [""], resources: ["pods"], verbs: ["get"]}]`},
		{"nodes", `[{apiGroups: [""], resources: ["nodes"], verbs: ["list"]}]`},
		{"bindings", `[{apiGroups: [""], resources: ["bindings"], verbs: ["create"]}]`},
		{"pods/binding", `[{apiGroups: [""], resources: ["pods/binding"], verbs: ["create"]}]`},
		{"pods/status", `[{apiGroups: [""], resources: ["pods/status"], verbs: ["patch"]}]`},
		{"persistentvolumes", `[{apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get"]}]`},
		{"persistentvolumeclaims", `[{apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get"]}]`},
		{"events", `[{apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"]}]`},
		{"configmaps", `[{apiGroups: [""], resources: ["configmaps"], verbs: ["get"]}]`},
		{"secrets", `[{apiGroups: [""], resources: ["secrets"], verbs: ["get"]}]`},
		{"DRA", `[{apiGroups: ["resource.k8s.io"], resources: ["resourceclaims"], verbs: ["get"]}]`},
		{"podgroups update", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["update"]}]`},
		{"podgroups/status", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups/status"], verbs: ["get"]}]`},
		{"lease update unrestricted", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "update"]}]`},
		{"lease of another name", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["kube-scheduler"], verbs: ["update"]}]`},
		{"lease delete", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["ome-scheduler"], verbs: ["delete"]}]`},
		{"wildcard verb", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["*"]}]`},
		{"wildcard group", `[{apiGroups: ["*"], resources: ["podgroups"], verbs: ["get"]}]`},
		{"wildcard url", `[{nonResourceURLs: ["/metrics*"], verbs: ["get"]}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, _ := fromYAML(t, tc.rules).([]any)
			if len(rbacViolations("test", rules, "ome-scheduler")) == 0 {
				t.Errorf("checker accepted forbidden rules %s", tc.rules)
			}
		})
	}
	t.Run("allowed rules pass", func(t *testing.T) {
		rules, _ := fromYAML(t, `
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"]}
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["ome-scheduler"], verbs: ["get", "update"]}
- {apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["get", "list", "watch"]}
- {nonResourceURLs: ["/metrics"], verbs: ["get"]}
`).([]any)
		if v := rbacViolations("test", rules, "ome-scheduler"); len(v) != 0 {
			t.Errorf("checker rejected the allowed rules: %v", v)
		}
	})
}

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
// Values documentation and defaults

// leafKeys lists dotted keys of values.yaml leaves (maps are walked; lists are leaves).
func leafKeys(prefix string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, prefix)
		return
	}
	for k, c := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafKeys(p, c, out)
	}
}

func TestValuesDefaultsAndReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	t.Run("defaults of §2", func(t *testing.T) {
		wantYAML(t, "values.yaml", vals, `
global:
  hub: ""
  imagePullSecrets: []
scheduler:
  name: ome-scheduler
  image: {repository: ome-scheduler, tag: latest, pullPolicy: IfNotPresent}
  imagePullSecrets: []
  replicaCount: 2
  leaderElect: true
  omeControllerIntegration: {enabled: true}
  deploymentStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 0}}
  verbosity: 2
  disablePreemption: true
  disablePodTopologySpreadScore: true
  percentageOfNodesToScore: null
  plugin:
    topologyKey: ""
    podGroupTopologyKeyAnnotation: ome.io/topology-key
    unsupportedPlacementGroupLabel: ome.io/placement-group
    defaultPermitTimeoutSeconds: 600
    podGroupSyncTimeoutSeconds: 30
    gcIntervalSeconds: 60
    standaloneDomainPacking: true
    gangSoftSpread: true
  omeGangPack: {scoreWeight: 10}
  nodeResourcesFit:
    scoreWeight: 10
    resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
  metrics:
    bindAddress: 0.0.0.0
    securePort: 10259
    authDelegation: {enabled: true}
    reader: {create: true, serviceAccounts: []}
    service: {enabled: true, type: ClusterIP, port: 10259, annotations: {}}
    serviceMonitor:
      enabled: false
      interval: 30s
      scrapeTimeout: 10s
      additionalLabels: {}
      tlsConfig: {}
      relabelings: []
      metricRelabelings: []
    grafanaDashboard: {enabled: false}
  probes:
    liveness: {path: /healthz, initialDelaySeconds: 15, periodSeconds: 20}
    readiness: {path: /readyz, initialDelaySeconds: 5}
  podDisruptionBudget: {enabled: true, minAvailable: 1}
  resources:
    requests: {cpu: 200m, memory: 4Gi}
    limits: {cpu: "2", memory: 12Gi}
  nodeSelector: {}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels:
              app.kubernetes.io/name: ome-scheduler
              app.kubernetes.io/component: scheduler
          topologyKey: kubernetes.io/hostname
  tolerations: []
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          app.kubernetes.io/name: ome-scheduler
          app.kubernetes.io/component: scheduler
  podAnnotations: {}
`)
	})
	t.Run("README documents every value and refusal", func(t *testing.T) {
		readme, err := os.ReadFile(filepath.Join(chartDir(t), "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		leafKeys("", vals, &keys)
		// resources and affinity are documented as whole objects
		for _, k := range keys {
			for _, whole := range []string{"scheduler.resources", "scheduler.affinity"} {
				if strings.HasPrefix(k, whole+".") {
					k = whole
				}
			}
			wantContains(t, "README.md", string(readme), "`"+k+"`")
		}
		for _, msg := range []string{
			"scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1",
			"scheduler.plugin.podGroupTopologyKeyAnnotation must be ome.io/topology-key when scheduler.omeControllerIntegration.enabled is true; disable OME controller integration for generic producers",
			"scheduler.podDisruptionBudget.minAvailable must be less than scheduler.replicaCount so voluntary maintenance can make progress",
			"scheduler.metrics.serviceMonitor.enabled requires scheduler.metrics.service.enabled \u2014 the ServiceMonitor selects the metrics Service",
		} {
			wantContains(t, "README.md", string(readme), msg)
		}
	})
}

// ---------------------------------------------------------------------------------------
// Demo manifests (seed "Use the OME scheduler", step 2)

func TestDemoManifests(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "manifests", "demo")
	cases := []struct {
		file string
		want string
	}{
		{"namespace.yaml", `
apiVersion: v1
kind: Namespace
metadata:
  name: gang-demo
`},
		{"podgroup.yaml", `
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: gang-demo
  namespace: gang-demo
  annotations:
    ome.io/topology-key: nvidia.com/gpu.clique
spec:
  minMember: 2
  scheduleTimeoutSeconds: 300
`},
		{"gang.yaml", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gang-demo
  namespace: gang-demo
spec:
  replicas: 2
  selector:
    matchLabels:
      app: gang-demo
  template:
    metadata:
      labels:
        app: gang-demo
        scheduling.x-k8s.io/pod-group: gang-demo
    spec:
      schedulerName: ome-scheduler
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels:
                  app: gang-demo
              topologyKey: kubernetes.io/hostname
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources:
            limits:
              nvidia.com/gpu: 1
`},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := yaml.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			wantYAML(t, tc.file, got, tc.want)
		})
	}
}
