package chart_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// ---------------------------------------------------------------------------------------
// Hardening values: priority class, metrics TLS, probes, resources, leader-election Role,
// release-unique selectors, NetworkPolicy

func podSpec(t *testing.T, r *rendered, name string) any {
	t.Helper()
	return dig(r.get(t, "Deployment", name).obj, "spec", "template", "spec")
}

func TestPriorityClassName(t *testing.T) {
	t.Run("default system-cluster-critical", func(t *testing.T) {
		t.Parallel()
		wantEq(t, "priorityClassName", dig(podSpec(t, render(t), "ome-scheduler"), "priorityClassName"), "system-cluster-critical")
	})
	t.Run("custom", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.priorityClassName=gpu-control-plane")
		wantEq(t, "priorityClassName", dig(podSpec(t, r, "ome-scheduler"), "priorityClassName"), "gpu-control-plane")
	})
	t.Run("empty omits the field", func(t *testing.T) {
		t.Parallel()
		res := template(t, "--set", "scheduler.priorityClassName=")
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		if has(podSpec(t, parseRender(t, res.stdout), "ome-scheduler"), "priorityClassName") {
			t.Errorf("pod spec has priorityClassName; want it omitted")
		}
		wantNotContains(t, "render", res.stdout, "priorityClassName")
	})
}

func TestMetricsTLS(t *testing.T) {
	t.Run("self-signed by default", func(t *testing.T) {
		t.Parallel()
		ps := podSpec(t, render(t), "ome-scheduler")
		wantYAML(t, "volumes", dig(ps, "volumes"), `[{name: config, configMap: {name: ome-scheduler-config}}]`)
		wantYAML(t, "volumeMounts", dig(ps, "containers", 0, "volumeMounts"), `[{name: config, mountPath: /etc/kubernetes/ome-scheduler, readOnly: true}]`)
	})
	t.Run("certificate from a Secret", func(t *testing.T) {
		t.Parallel()
		ps := podSpec(t, render(t, "--set", "scheduler.metrics.tls.secretName=ome-scheduler-metrics-tls"), "ome-scheduler")
		wantYAML(t, "args", dig(ps, "containers", 0, "args"), `
- --config=/etc/kubernetes/ome-scheduler/config.yaml
- --v=2
- --bind-address=0.0.0.0
- --secure-port=10259
- --tls-cert-file=/etc/kubernetes/ome-scheduler-tls/tls.crt
- --tls-private-key-file=/etc/kubernetes/ome-scheduler-tls/tls.key
`)
		wantYAML(t, "volumeMounts", dig(ps, "containers", 0, "volumeMounts"), `
- {name: config, mountPath: /etc/kubernetes/ome-scheduler, readOnly: true}
- {name: metrics-tls, mountPath: /etc/kubernetes/ome-scheduler-tls, readOnly: true}
`)
		wantYAML(t, "volumes", dig(ps, "volumes"), `
- name: config
  configMap: {name: ome-scheduler-config}
- name: metrics-tls
  secret:
    secretName: ome-scheduler-metrics-tls
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
`)
	})
}

func TestProbes(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		c := dig(podSpec(t, render(t), "ome-scheduler"), "containers", 0)
		wantYAML(t, "livenessProbe", dig(c, "livenessProbe"), `
httpGet: {path: /livez, port: https-metrics, scheme: HTTPS}
initialDelaySeconds: 15
periodSeconds: 20
timeoutSeconds: 5
failureThreshold: 3
`)
		wantYAML(t, "readinessProbe", dig(c, "readinessProbe"), `
httpGet: {path: /readyz, port: https-metrics, scheme: HTTPS}
initialDelaySeconds: 5
periodSeconds: 10
timeoutSeconds: 5
failureThreshold: 3
`)
		wantYAML(t, "startupProbe", dig(c, "startupProbe"), `
httpGet: {path: /livez, port: https-metrics, scheme: HTTPS}
periodSeconds: 5
timeoutSeconds: 5
failureThreshold: 60
`)
	})
	t.Run("custom", func(t *testing.T) {
		t.Parallel()
		r := render(t,
			"--set", "scheduler.probes.liveness.timeoutSeconds=2", "--set", "scheduler.probes.liveness.failureThreshold=6",
			"--set", "scheduler.probes.readiness.periodSeconds=4", "--set", "scheduler.probes.readiness.timeoutSeconds=3", "--set", "scheduler.probes.readiness.failureThreshold=2",
			"--set", "scheduler.probes.startup.path=/healthz", "--set", "scheduler.probes.startup.periodSeconds=10",
			"--set", "scheduler.probes.startup.timeoutSeconds=4", "--set", "scheduler.probes.startup.failureThreshold=30")
		c := dig(podSpec(t, r, "ome-scheduler"), "containers", 0)
		wantYAML(t, "livenessProbe", dig(c, "livenessProbe"), `
httpGet: {path: /livez, port: https-metrics, scheme: HTTPS}
initialDelaySeconds: 15
periodSeconds: 20
timeoutSeconds: 2
failureThreshold: 6
`)
		wantYAML(t, "readinessProbe", dig(c, "readinessProbe"), `
httpGet: {path: /readyz, port: https-metrics, scheme: HTTPS}
initialDelaySeconds: 5
periodSeconds: 4
timeoutSeconds: 3
failureThreshold: 2
`)
		wantYAML(t, "startupProbe", dig(c, "startupProbe"), `
httpGet: {path: /healthz, port: https-metrics, scheme: HTTPS}
periodSeconds: 10
timeoutSeconds: 4
failureThreshold: 30
`)
	})
	t.Run("startup probe off", func(t *testing.T) {
		t.Parallel()
		c := dig(podSpec(t, render(t, "--set", "scheduler.probes.startup.enabled=false"), "ome-scheduler"), "containers", 0)
		if has(c, "startupProbe") {
			t.Errorf("container has a startupProbe with probes.startup.enabled=false")
		}
	})
}

func TestResourcesCPULimit(t *testing.T) {
	t.Run("no CPU limit by default", func(t *testing.T) {
		t.Parallel()
		c := dig(podSpec(t, render(t), "ome-scheduler"), "containers", 0)
		wantYAML(t, "resources", dig(c, "resources"), `{limits: {memory: 4Gi}, requests: {cpu: 200m, memory: 512Mi}}`)
	})
	t.Run("a CPU limit can still be set", func(t *testing.T) {
		t.Parallel()
		c := dig(podSpec(t, render(t, "--set", "scheduler.resources.limits.cpu=4"), "ome-scheduler"), "containers", 0)
		wantYAML(t, "resources", dig(c, "resources"), `{limits: {cpu: 4, memory: 4Gi}, requests: {cpu: 200m, memory: 512Mi}}`)
	})
}

// The Lease is named {name} and lives in the release namespace: the configuration's
// resourceNamespace, the Role and its RoleBinding all use that namespace.
func TestLeaderElectionRole(t *testing.T) {
	cases := []struct{ ns, name string }{
		{"ome", "ome-scheduler"},
		{"gpu-system", "ome-scheduler"},
		{"ome", "gangs"},
	}
	for _, tc := range cases {
		t.Run(tc.ns+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			r := renderNS(t, tc.ns, "--set", "scheduler.name="+tc.name)
			cfg := configYAML(t, r, tc.name)
			wantLine(t, "config.yaml", cfg, "  resourceName: "+tc.name)
			wantLine(t, "config.yaml", cfg, "  resourceNamespace: "+tc.ns)
			role := r.get(t, "Role", tc.name+"-leader-election")
			wantEq(t, "Role namespace", role.namespace(), tc.ns)
			wantYAML(t, "Role rules", role.obj["rules"], `
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"]}
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["`+tc.name+`"], verbs: ["get", "update"]}
`)
			b := r.get(t, "RoleBinding", tc.name+"-leader-election")
			wantEq(t, "RoleBinding namespace", b.namespace(), tc.ns)
			wantYAML(t, "RoleBinding", map[string]any{"roleRef": b.obj["roleRef"], "subjects": b.obj["subjects"]}, `
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: `+tc.name+`-leader-election}
subjects: [{kind: ServiceAccount, name: `+tc.name+`, namespace: `+tc.ns+`}]
`)
			for _, l := range []string{
				`  - apiGroups: ["coordination.k8s.io"]`,
				`    resources: ["leases"]`,
				`    verbs: ["create"]`,
				`    resourceNames: ["` + tc.name + `"]`,
				`    verbs: ["get", "update"]`,
			} {
				wantLine(t, "Role", role.text, l)
			}
		})
	}
}

// Two releases in one namespace select only their own pods.
func TestReleaseUniqueSelectors(t *testing.T) {
	renderRelease := func(t *testing.T, release string) *rendered {
		t.Helper()
		res := helmTemplate(t, devenv.HelmRender{Release: release, Args: []string{
			"--set", "scheduler.name=" + release, "--set", "scheduler.metrics.serviceMonitor.enabled=true",
			"--set", "scheduler.networkPolicy.enabled=true"}})
		if res.err != nil {
			t.Fatalf("helm template %s failed: %v\n%s", release, res.err, res.stderr)
		}
		return parseRender(t, res.stdout)
	}
	for _, release := range []string{"sched-a", "sched-b"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			r := renderRelease(t, release)
			sel := map[string]any{
				"app.kubernetes.io/name":      "ome-scheduler",
				"app.kubernetes.io/instance":  release,
				"app.kubernetes.io/component": "scheduler",
			}
			d := r.get(t, "Deployment", release)
			wantEq(t, "Deployment selector", dig(d.obj, "spec", "selector", "matchLabels"), sel)
			podLabels, _ := dig(d.obj, "spec", "template", "metadata", "labels").(map[string]any)
			for k, v := range sel {
				wantEq(t, "pod label "+k, podLabels[k], v)
			}
			wantEq(t, "Service selector", dig(r.get(t, "Service", release+"-metrics").obj, "spec", "selector"), sel)
			wantEq(t, "PDB selector", dig(r.get(t, "PodDisruptionBudget", release).obj, "spec", "selector", "matchLabels"), sel)
			wantEq(t, "ServiceMonitor selector", dig(r.get(t, "ServiceMonitor", release).obj, "spec", "selector", "matchLabels"), sel)
			wantEq(t, "NetworkPolicy selector", dig(r.get(t, "NetworkPolicy", release).obj, "spec", "podSelector", "matchLabels"), sel)
			ps := dig(d.obj, "spec", "template", "spec")
			wantEq(t, "anti-affinity selector", dig(ps, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0, "labelSelector", "matchLabels"), sel)
			wantEq(t, "spread selector", dig(ps, "topologySpreadConstraints", 0, "labelSelector", "matchLabels"), sel)
			for _, o := range r.docs {
				wantEq(t, o.kind()+"/"+o.name()+" instance label", dig(o.obj, "metadata", "labels", "app.kubernetes.io/instance"), release)
			}
		})
	}
	t.Run("numeric release name stays a string", func(t *testing.T) {
		t.Parallel()
		res := helmTemplate(t, devenv.HelmRender{Release: "123"})
		if res.err != nil {
			t.Fatalf("helm template failed: %v\n%s", res.err, res.stderr)
		}
		r := parseRender(t, res.stdout)
		ps := podSpec(t, r, "ome-scheduler")
		wantEq(t, "anti-affinity instance", dig(ps, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0, "labelSelector", "matchLabels", "app.kubernetes.io/instance"), "123")
		wantEq(t, "selector instance", dig(r.get(t, "Deployment", "ome-scheduler").obj, "spec", "selector", "matchLabels", "app.kubernetes.io/instance"), "123")
	})
	t.Run("user affinity may use the release name", func(t *testing.T) {
		t.Parallel()
		f := writeValues(t, `scheduler:
  affinity:
    podAntiAffinity: null
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                example.com/release: "{{ .Release.Name }}-peer"
`)
		ps := podSpec(t, render(t, "-f", f), "ome-scheduler")
		wantEq(t, "templated label", dig(ps, "affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0, "podAffinityTerm", "labelSelector", "matchLabels", "example.com/release"), "ome-scheduler-peer")
	})
}

func TestNetworkPolicy(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		if n := len(render(t).ofKind("NetworkPolicy")); n != 0 {
			t.Errorf("default render has %d NetworkPolicies", n)
		}
	})
	t.Run("enabled without peers denies all ingress", func(t *testing.T) {
		t.Parallel()
		np := render(t, "--set", "scheduler.networkPolicy.enabled=true").get(t, "NetworkPolicy", "ome-scheduler")
		wantEq(t, "apiVersion", np.obj["apiVersion"], "networking.k8s.io/v1")
		wantEq(t, "namespace", np.namespace(), releaseNS)
		wantEq(t, "labels", dig(np.obj, "metadata", "labels"), expectedLabels(t))
		wantYAML(t, "spec", np.obj["spec"], `
podSelector:
  matchLabels: {app.kubernetes.io/name: ome-scheduler, app.kubernetes.io/instance: ome-scheduler, app.kubernetes.io/component: scheduler}
policyTypes: [Ingress]
ingress: []
`)
	})
	t.Run("peers reach the secure port only", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.networkPolicy.enabled=true", "--set", "scheduler.metrics.securePort=10300",
			"--set-json", `scheduler.networkPolicy.from=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}},{"ipBlock":{"cidr":"192.168.0.0/16","except":["192.168.1.0/24"]}}]`)
		wantYAML(t, "ingress", dig(r.get(t, "NetworkPolicy", "ome-scheduler").obj, "spec", "ingress"), `
- from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
    - ipBlock: {cidr: 192.168.0.0/16, except: [192.168.1.0/24]}
  ports:
    - {protocol: TCP, port: 10300}
`)
	})
}

func TestServiceMonitorTLSAndAuthorization(t *testing.T) {
	on := []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true"}
	endpoint := func(t *testing.T, ns string, args ...string) any {
		t.Helper()
		r := renderNS(t, ns, append(append([]string{}, on...), args...)...)
		return dig(r.get(t, "ServiceMonitor", "ome-scheduler").obj, "spec", "endpoints", 0)
	}
	cases := []struct {
		name          string
		ns            string
		args          []string
		tlsConfig     string
		authorization string // "" = bearerTokenFile
	}{
		{"defaults", releaseNS, nil, `{insecureSkipVerify: true}`, ""},
		{"CA from a Secret, default serverName", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=ome-scheduler-metrics-tls"},
			`{ca: {secret: {name: ome-scheduler-metrics-tls, key: ca.crt}}, serverName: ome-scheduler-metrics.ome.svc}`, ""},
		{"CA from a Secret in another namespace", "gpu-system",
			[]string{"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=tls", "--set", "scheduler.metrics.serviceMonitor.ca.secret.key=ca.pem"},
			`{ca: {secret: {name: tls, key: ca.pem}}, serverName: ome-scheduler-metrics.gpu-system.svc}`, ""},
		{"CA from a ConfigMap with serverName", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.ca.configMap.name=cluster-ca", "--set", "scheduler.metrics.serviceMonitor.serverName=scheduler.example.com"},
			`{ca: {configMap: {name: cluster-ca, key: ca.crt}}, serverName: scheduler.example.com}`, ""},
		{"serverName alone keeps insecureSkipVerify", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.serverName=scheduler.example.com"},
			`{insecureSkipVerify: true}`, ""},
		{"explicit tlsConfig wins over ca", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=tls", "--set", "scheduler.metrics.serviceMonitor.tlsConfig.caFile=/etc/prom/ca.crt"},
			`{caFile: /etc/prom/ca.crt}`, ""},
		{"authorization from a Secret", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.authorization.credentials.name=scrape-token"},
			`{insecureSkipVerify: true}`, `{type: Bearer, credentials: {name: scrape-token, key: token}}`},
		{"authorization with custom key and type", releaseNS,
			[]string{"--set", "scheduler.metrics.serviceMonitor.authorization.credentials.name=scrape-token",
				"--set", "scheduler.metrics.serviceMonitor.authorization.credentials.key=jwt",
				"--set", "scheduler.metrics.serviceMonitor.authorization.type=Token"},
			`{insecureSkipVerify: true}`, `{type: Token, credentials: {name: scrape-token, key: jwt}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint(t, tc.ns, tc.args...)
			wantYAML(t, "tlsConfig", dig(ep, "tlsConfig"), tc.tlsConfig)
			if tc.authorization == "" {
				wantEq(t, "bearerTokenFile", dig(ep, "bearerTokenFile"), "/var/run/secrets/kubernetes.io/serviceaccount/token")
				if has(ep, "authorization") {
					t.Errorf("endpoint has authorization without credentials")
				}
				return
			}
			wantYAML(t, "authorization", dig(ep, "authorization"), tc.authorization)
			if has(ep, "bearerTokenFile") {
				t.Errorf("endpoint has both authorization and bearerTokenFile")
			}
		})
	}
}

// NOTES.txt is rendered by helm install/upgrade only; a copy of the chart with one extra
// template that includes it lets `helm template` show the text.
func TestNotes(t *testing.T) {
	notes := func(t *testing.T, args ...string) string {
		t.Helper()
		dir := copyChart(t)
		writeFile(t, filepath.Join(dir, "templates", "zz-notes-under-test.yaml"), `apiVersion: v1
kind: ConfigMap
metadata:
  name: notes-under-test
data:
  notes: {{ include (print $.Template.BasePath "/NOTES.txt") . | quote }}
`)
		res := helmTemplate(t, devenv.HelmRender{Chart: dir, Args: args})
		if res.err != nil {
			t.Fatalf("helm template failed: %v\n%s", res.err, res.stderr)
		}
		cm := parseRender(t, res.stdout).get(t, "ConfigMap", "notes-under-test")
		s, _ := dig(cm.obj, "data", "notes").(string)
		if s == "" {
			t.Fatal("NOTES.txt rendered empty")
		}
		return s
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		n := notes(t)
		for _, want := range []string{
			"schedulerName: ome-scheduler",
			"scheduling.x-k8s.io/pod-group",
			"kubectl get crd podgroups.scheduling.x-k8s.io",
			"--skip-crds",
			"kubectl -n ome rollout status deployment/ome-scheduler",
			"app.kubernetes.io/instance=ome-scheduler",
			"kubectl -n ome get lease ome-scheduler",
			// The log command reads the Lease holder, never a pod the Deployment picks (the standby).
			`kubectl -n ome logs "$(kubectl -n ome get lease ome-scheduler -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)"`,
			"reason=FailedScheduling",
			"/metrics",
			"Service ome/ome-scheduler-metrics port 10259",
			"ClusterRole ome-scheduler-metrics-reader",
			"scheduler.metrics.reader.serviceAccounts",
			"self-signed",
			"port-forward service/ome-scheduler-metrics",
			"ServiceMonitor: off",
			"PrometheusRule: off",
		} {
			wantContains(t, "NOTES", n, want)
		}
		wantNotContains(t, "NOTES", n, "logs deployment/")
	})
	t.Run("monitoring on", func(t *testing.T) {
		t.Parallel()
		n := notes(t, "--set", "scheduler.name=gangs", "--set", "scheduler.metrics.serviceMonitor.enabled=true",
			"--set", "scheduler.metrics.prometheusRule.enabled=true", "--set", "scheduler.metrics.tls.secretName=gangs-tls",
			"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus","namespace":"monitoring"}]`)
		for _, want := range []string{
			"schedulerName: gangs",
			"ServiceMonitor: ome/gangs",
			"PrometheusRule: ome/gangs",
			"Secret ome/gangs-tls",
			"monitoring/prometheus",
		} {
			wantContains(t, "NOTES", n, want)
		}
		wantNotContains(t, "NOTES", n, "self-signed")
	})
	t.Run("no unrendered template text", func(t *testing.T) {
		t.Parallel()
		n := notes(t, "--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.enabled=false",
			"--set", "scheduler.metrics.service.enabled=false")
		if strings.Contains(n, "{{") || strings.Contains(n, "<no value>") {
			t.Errorf("NOTES has unrendered template text:\n%s", n)
		}
		wantNotContains(t, "NOTES", n, "get lease")
		wantNotContains(t, "NOTES", n, "port-forward")
		// One replica without leader election: the Deployment's only pod is the scheduler.
		wantContains(t, "NOTES", n, "kubectl -n ome logs deployment/ome-scheduler")
	})
}
