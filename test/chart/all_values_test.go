package chart_test

import (
	"testing"
)

// ---------------------------------------------------------------------------------------
// Every value changed

func TestAllValuesChanged(t *testing.T) {
	t.Run("A: every value changed in place", func(t *testing.T) {
		t.Parallel()
		r := renderNS(t, "sched-system", "-f", fixturePath(t, "values/all-a.yaml"))
		const name = "gang-sched"

		wantEq(t, "objects", r.ids(), []string{
			"ClusterRole/gang-sched-debug-reader",
			"ClusterRole/gang-sched-extras",
			"ClusterRole/gang-sched-metrics-reader",
			"ClusterRoleBinding/gang-sched-auth-delegator",
			"ClusterRoleBinding/gang-sched-debug-reader",
			"ClusterRoleBinding/gang-sched-extras",
			"ClusterRoleBinding/gang-sched-metrics-reader",
			"ClusterRoleBinding/gang-sched-system-scheduler",
			"ClusterRoleBinding/gang-sched-system-volume-scheduler",
			"ConfigMap/gang-sched-config@sched-system",
			"ConfigMap/gang-sched-grafana-dashboard@sched-system",
			"Deployment/gang-sched@sched-system",
			"NetworkPolicy/gang-sched@sched-system",
			"PodDisruptionBudget/gang-sched@sched-system",
			"PrometheusRule/gang-sched@sched-system",
			"Role/gang-sched-leader-election@sched-system",
			"RoleBinding/gang-sched-extension-apiserver-authentication-reader@kube-system",
			"RoleBinding/gang-sched-leader-election@sched-system",
			"Service/gang-sched-metrics@sched-system",
			"ServiceAccount/gang-sched@sched-system",
			"ServiceMonitor/gang-sched@sched-system",
		})

		if got := configYAML(t, r, name); got != fixture(t, "config/all-a.yaml") {
			t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, fixture(t, "config/all-a.yaml"))
		}
		wantLine(t, "ConfigMap", r.get(t, "ConfigMap", name+"-config").text, "        percentageOfNodesToScore: 42")

		d := r.get(t, "Deployment", name)
		wantYAML(t, "replicas", dig(d.obj, "spec", "replicas"), "3")
		wantYAML(t, "strategy", dig(d.obj, "spec", "strategy"), `{type: RollingUpdate, rollingUpdate: {maxUnavailable: 2, maxSurge: "25%"}}`)
		wantEq(t, "selector", dig(d.obj, "spec", "selector", "matchLabels"), selectorLabels)
		ann := dig(d.obj, "spec", "template", "metadata", "annotations").(map[string]any)
		wantEq(t, "podAnnotations", ann["example.com/team"], "scheduling")
		wantEq(t, "annotation count", len(ann), 2)
		wantYAML(t, "pod spec", dig(d.obj, "spec", "template", "spec"), fixture(t, "deployment/all-a-pod-spec.yaml"))
		wantContains(t, "Deployment text (keys sorted)", d.text, "\n        resources:\n          limits:\n            cpu: \"1\"\n            memory: 2Gi\n          requests:\n")

		s := r.get(t, "Service", name+"-metrics")
		wantYAML(t, "Service annotations", dig(s.obj, "metadata", "annotations"), `{example.com/scrape: "true"}`)
		wantYAML(t, "Service spec", s.obj["spec"], `
type: NodePort
selector:
  app.kubernetes.io/name: ome-scheduler
  app.kubernetes.io/instance: ome-scheduler
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
		wantYAML(t, "ServiceMonitor spec", sm.obj["spec"], fixture(t, "servicemonitor/all-a-spec.yaml"))

		subject := `[{kind: ServiceAccount, name: gang-sched, namespace: sched-system}]`
		for _, b := range []struct{ name, kind, ref string }{
			{name + "-system-scheduler", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:kube-scheduler}"},
			{name + "-system-volume-scheduler", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:volume-scheduler}"},
			{name + "-extras", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gang-sched-extras}"},
			{name + "-extension-apiserver-authentication-reader", "RoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}"},
			{name + "-leader-election", "RoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: gang-sched-leader-election}"},
			{name + "-auth-delegator", "ClusterRoleBinding", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}"},
		} {
			o := r.get(t, b.kind, b.name)
			wantYAML(t, b.name+" roleRef", o.obj["roleRef"], b.ref)
			wantYAML(t, b.name+" subjects", o.obj["subjects"], subject)
		}
		wantYAML(t, "extras rules", r.get(t, "ClusterRole", name+"-extras").obj["rules"], `
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaimtemplates"]
  verbs: ["get", "list", "watch"]
`)
		wantYAML(t, "leader-election rules", r.get(t, "Role", name+"-leader-election").obj["rules"], `
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["gang-sched"]
  verbs: ["get", "update"]
`)

		np := r.get(t, "NetworkPolicy", name)
		wantYAML(t, "NetworkPolicy spec", np.obj["spec"], fixture(t, "networkpolicy/all-a-spec.yaml"))

		pr := r.get(t, "PrometheusRule", name)
		wantEq(t, "PrometheusRule label release", dig(pr.obj, "metadata", "labels", "release"), "kube-prometheus")
		wantContains(t, "PrometheusRule", pr.text, `ome_scheduler_gang_unwind_total{cluster="a",job="gang-sched"}[30m]`)
		wantNotContains(t, "PrometheusRule", pr.text, `job="gang-sched-metrics"`)
		_, rules := alertRules(t, r, name)
		if _, ok := rules["OMEGangFormationSlow"]; ok {
			t.Errorf("OMEGangFormationSlow rendered with enabled: false")
		}
		wantEq(t, "OMEGangDegraded severity", dig(rules["OMEGangDegraded"], "labels", "severity"), "page")
		wantEq(t, "OMEGangNoFit severity", dig(rules["OMEGangNoFit"], "labels", "severity"), "ticket")
		wantEq(t, "OMEGangNoFit runbook_url", dig(rules["OMEGangNoFit"], "annotations", "runbook_url"),
			"https://runbooks.example.com/ome/operations.html#omegangnofit")
		mr := r.get(t, "ClusterRoleBinding", name+"-metrics-reader")
		wantYAML(t, "metrics-reader roleRef", mr.obj["roleRef"], "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gang-sched-metrics-reader}")
		wantYAML(t, "metrics-reader subjects", mr.obj["subjects"], `
- {kind: ServiceAccount, name: prometheus, namespace: monitoring}
- {kind: ServiceAccount, name: collector, namespace: telemetry}
`)
		dr := r.get(t, "ClusterRoleBinding", name+"-debug-reader")
		wantYAML(t, "debug-reader roleRef", dr.obj["roleRef"], "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gang-sched-debug-reader}")
		wantYAML(t, "debug-reader subjects", dr.obj["subjects"], `
- {kind: Group, name: sre, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: oncall, namespace: telemetry}
`)
		wantYAML(t, "debug-reader rules", r.get(t, "ClusterRole", name+"-debug-reader").obj["rules"], `
- {nonResourceURLs: ["/configz"], verbs: [get]}
`)
		for _, o := range r.docs {
			wantEq(t, o.kind()+"/"+o.name()+" labels app.kubernetes.io/name", dig(o.obj, "metadata", "labels", "app.kubernetes.io/name"), "ome-scheduler")
		}
	})

	t.Run("B: every switch turned off", func(t *testing.T) {
		t.Parallel()
		res := template(t, "-f", fixturePath(t, "values/all-b.yaml"))
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
			"Role/ome-scheduler-leader-election@ome",
			"RoleBinding/ome-scheduler-extension-apiserver-authentication-reader@kube-system",
			"RoleBinding/ome-scheduler-leader-election@ome",
			"ServiceAccount/ome-scheduler@ome",
		})
		if got := configYAML(t, r, "ome-scheduler"); got != fixture(t, "config/all-b.yaml") {
			t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, fixture(t, "config/all-b.yaml"))
		}
		d := r.get(t, "Deployment", "ome-scheduler")
		ps := dig(d.obj, "spec", "template", "spec")
		wantYAML(t, "imagePullSecrets", dig(ps, "imagePullSecrets"), "[{name: global-pull}]")
		for _, absent := range []string{"affinity", "topologySpreadConstraints", "nodeSelector", "tolerations", "priorityClassName"} {
			if has(ps, absent) {
				t.Errorf("pod spec has %s; want it omitted when empty", absent)
			}
		}
		if has(ps, "containers", 0, "resources") {
			t.Errorf("container has resources; want them omitted when empty")
		}
		if has(ps, "containers", 0, "startupProbe") {
			t.Errorf("container has a startupProbe; want none with probes.startup.enabled false")
		}
		wantYAML(t, "replicas", dig(d.obj, "spec", "replicas"), "1")
		wantNotContains(t, "render", res.stdout, "system:auth-delegator")
		wantNotContains(t, "render", res.stdout, "metrics-reader")
	})
}
