package chart_test

import (
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// Render variants

func TestRenderVariants(t *testing.T) {
	t.Run("custom memory (§7.4)", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.resources.requests.memory=1Gi", "--set", "scheduler.resources.limits.memory=2Gi")
		d := r.get(t, "Deployment", "ome-scheduler")
		wantYAML(t, "resources", dig(d.obj, "spec", "template", "spec", "containers", 0, "resources"), `
limits:
  memory: 2Gi
requests:
  cpu: 200m
  memory: 1Gi
`)
		wantContains(t, "Deployment", d.text, "        resources:\n          limits:\n            memory: 2Gi\n          requests:\n            cpu: 200m\n            memory: 1Gi\n")
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
		wantYAML(t, "ServiceMonitor spec", sm.obj["spec"], fixture(t, "servicemonitor/default-spec.yaml"))
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

	// The first fix the chart README gives for clusters that keep the critical priority
	// classes to kube-system: the release in kube-system, with the default priority class.
	t.Run("release in kube-system keeps system-cluster-critical", func(t *testing.T) {
		t.Parallel()
		r := renderNS(t, "kube-system")
		d := r.get(t, "Deployment", "ome-scheduler")
		wantEq(t, "Deployment namespace", d.namespace(), "kube-system")
		wantEq(t, "priorityClassName", dig(d.obj, "spec", "template", "spec", "priorityClassName"), "system-cluster-critical")
		wantLine(t, "config.yaml", configYAML(t, r, "ome-scheduler"), "  resourceNamespace: kube-system")
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
				want := "schedulers"
				if d.name() == "ome-scheduler-extension-apiserver-authentication-reader" {
					want = "kube-system"
				}
				wantEq(t, "RoleBinding "+d.name()+" namespace", d.namespace(), want)
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
// scheduler.featureGates: one --feature-gates argument after the others, gates sorted by name

func TestFeatureGates(t *testing.T) {
	baseArgs := `
- --config=/etc/kubernetes/ome-scheduler/config.yaml
- --v=2
- --bind-address=0.0.0.0
- --secure-port=10259
`
	const twoGates = "--feature-gates=NominatedNodeNameForExpectation=false,SchedulerAsyncAPICalls=true"
	args := func(t *testing.T, r *rendered) any {
		t.Helper()
		return dig(podSpec(t, r, "ome-scheduler"), "containers", 0, "args")
	}

	t.Run("none by default", func(t *testing.T) {
		t.Parallel()
		res := template(t)
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantYAML(t, "args", args(t, parseRender(t, res.stdout)), baseArgs)
		wantNotContains(t, "render", res.stdout, "--feature-gates")
	})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"empty map", []string{"--set-json", "scheduler.featureGates={}"}},
		{"null", []string{"--set", "scheduler.featureGates=null"}},
	} {
		t.Run("none with "+tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err != nil {
				t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
			}
			wantYAML(t, "args", args(t, parseRender(t, res.stdout)), baseArgs)
			wantNotContains(t, "render", res.stdout, "--feature-gates")
		})
	}
	t.Run("two gates with --set sorted by name", func(t *testing.T) {
		t.Parallel()
		// Given in reverse order: the argument lists them by name.
		res := template(t, "--set", "scheduler.featureGates.SchedulerAsyncAPICalls=true",
			"--set", "scheduler.featureGates.NominatedNodeNameForExpectation=false")
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantYAML(t, "args", args(t, parseRender(t, res.stdout)), baseArgs+"- "+twoGates+"\n")
		wantLine(t, "render", res.stdout, "        - "+twoGates)
		wantEq(t, "--feature-gates arguments", strings.Count(res.stdout, "--feature-gates"), 1)
	})
	t.Run("two gates from a values file after the TLS arguments", func(t *testing.T) {
		t.Parallel()
		values := writeValues(t, `
scheduler:
  featureGates:
    SchedulerAsyncAPICalls: true
    NominatedNodeNameForExpectation: false
  metrics:
    tls:
      secretName: sched-tls
`)
		r := render(t, "-f", values)
		wantYAML(t, "args", args(t, r), baseArgs+`
- --tls-cert-file=/etc/kubernetes/ome-scheduler-tls/tls.crt
- --tls-private-key-file=/etc/kubernetes/ome-scheduler-tls/tls.key
- `+twoGates+`
`)
	})
	t.Run("one gate", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.featureGates.NominatedNodeNameForExpectation=false")
		wantYAML(t, "args", args(t, r), baseArgs+"- --feature-gates=NominatedNodeNameForExpectation=false\n")
	})
}
