package chart_test

import (
	"regexp"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// Default render

func TestDefaultRender(t *testing.T) {
	res := template(t)
	if res.err != nil {
		t.Fatalf("default render failed: %v\n%s", res.err, res.stderr)
	}
	r := parseRender(t, res.stdout)
	version, appVersion := chartMeta(t)

	t.Run("objects", func(t *testing.T) {
		want := []string{
			"ClusterRole/ome-scheduler-debug-reader",
			"ClusterRole/ome-scheduler-extras",
			"ClusterRole/ome-scheduler-metrics-reader",
			"ClusterRoleBinding/ome-scheduler-auth-delegator",
			"ClusterRoleBinding/ome-scheduler-extras",
			"ClusterRoleBinding/ome-scheduler-system-scheduler",
			"ClusterRoleBinding/ome-scheduler-system-volume-scheduler",
			"ConfigMap/ome-scheduler-config@ome",
			"Deployment/ome-scheduler@ome",
			"PodDisruptionBudget/ome-scheduler@ome",
			"Role/ome-scheduler-leader-election@ome",
			"RoleBinding/ome-scheduler-extension-apiserver-authentication-reader@kube-system",
			"RoleBinding/ome-scheduler-leader-election@ome",
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
		if got != defaultConfig(t) {
			t.Errorf("config.yaml differs from chart.md §4.1\n--- got:\n%s\n--- want:\n%s", got, defaultConfig(t))
		}
	})

	t.Run("configmap raw text and indentation", func(t *testing.T) {
		cm := r.get(t, "ConfigMap", "ome-scheduler-config")
		wantEq(t, "ConfigMap source", cm.source, "ome-scheduler/templates/configmap.yaml")
		wantContains(t, "ConfigMap text", cm.text, "data:\n  config.yaml: |\n"+indent(defaultConfig(t), 4))
		for _, l := range []string{
			"          multiPoint:",
			"              - name: OMEGangPack",
			"          bind:",
			"              - name: DefaultBinder",
			"          score:",
			"              - name: NodeResourcesFit",
			"                type: MostAllocated",
			"              - name: PodTopologySpread",
			`              podGroupTopologyKeyAnnotation: "ome.io/topology-key"`,
			`              unsupportedPlacementGroupLabel: ""`,
			`              placementGroupLabel: "ome.io/placement-group"`,
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

	t.Run("hardening defaults", func(t *testing.T) {
		cm := r.get(t, "ConfigMap", "ome-scheduler-config")
		wantLine(t, "ConfigMap", cm.text, "    enableProfiling: false")
		wantLine(t, "ConfigMap", cm.text, "    enableContentionProfiling: false")
		d := r.get(t, "Deployment", "ome-scheduler")
		ps := dig(d.obj, "spec", "template", "spec")
		wantEq(t, "priorityClassName", dig(ps, "priorityClassName"), "system-cluster-critical")
		wantEq(t, "image", dig(ps, "containers", 0, "image"), "ome-scheduler:"+appVersion)
		if has(ps, "containers", 0, "resources", "limits", "cpu") {
			t.Errorf("default resources have a CPU limit")
		}
		wantEq(t, "memory limit", dig(ps, "containers", 0, "resources", "limits", "memory"), "4Gi")
		wantEq(t, "CPU request", dig(ps, "containers", 0, "resources", "requests", "cpu"), "200m")
		wantEq(t, "memory request", dig(ps, "containers", 0, "resources", "requests", "memory"), "512Mi")
		for probe, path := range map[string]string{"livenessProbe": "/livez", "readinessProbe": "/readyz", "startupProbe": "/livez"} {
			wantEq(t, probe+" path", dig(ps, "containers", 0, probe, "httpGet", "path"), path)
			if !has(ps, "containers", 0, probe, "timeoutSeconds") || !has(ps, "containers", 0, probe, "failureThreshold") {
				t.Errorf("%s lacks timeoutSeconds or failureThreshold", probe)
			}
		}
		for _, absent := range []string{"NetworkPolicy", "PrometheusRule", "ServiceMonitor"} {
			if n := len(r.ofKind(absent)); n != 0 {
				t.Errorf("default render has %d %s objects", n, absent)
			}
		}
		if strings.Contains(res.stdout, "--tls-cert-file") {
			t.Errorf("default render passes --tls-cert-file; want the self-signed certificate")
		}
	})

	t.Run("no percentageOfNodesToScore", func(t *testing.T) {
		wantNotContains(t, "render", res.stdout, "percentageOfNodesToScore")
	})

	t.Run("raw strings of §7.2", func(t *testing.T) {
		for _, s := range []string{
			"kind: PodDisruptionBudget",
			"name: ome-scheduler-metrics",
			"path: /livez",
			"path: /readyz",
			"requiredDuringSchedulingIgnoredDuringExecution:",
			"topologyKey: kubernetes.io/hostname",
			"whenUnsatisfiable: ScheduleAnyway",
			"maxUnavailable: 1",
			"maxSurge: 0",
			fixture(t, "deployment/default-resources.txt"),
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
		wantYAML(t, "pod spec", dig(d.obj, "spec", "template", "spec"), fixture(t, "deployment/default-pod-spec.yaml"))
		for _, absent := range []string{"imagePullSecrets", "nodeSelector", "tolerations"} {
			if has(d.obj, "spec", "template", "spec", absent) {
				t.Errorf("pod spec has %s; want it omitted when empty", absent)
			}
		}
		wantContains(t, "Deployment text", d.text, "\n"+fixture(t, "deployment/default-resources.txt"))
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
  app.kubernetes.io/instance: ome-scheduler
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
    app.kubernetes.io/instance: ome-scheduler
    app.kubernetes.io/component: scheduler
`)
	})

	t.Run("W1 profile schedulerName", func(t *testing.T) {
		wantLine(t, "config.yaml", configYAML(t, r, "ome-scheduler"), "  - schedulerName: ome-scheduler")
	})
}
