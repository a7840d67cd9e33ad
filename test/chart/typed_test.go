package chart_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// ---------------------------------------------------------------------------------------
// Every rendered object of a built-in kind decodes strictly into its Kubernetes type (no
// misspelt or misplaced field), config.yaml into KubeSchedulerConfiguration v1, and its
// OMEGangPack arguments with the plugin's own strict decoder.

func TestRenderedObjectsDecodeStrictly(t *testing.T) {
	typed := map[string]func() any{
		"Deployment":          func() any { return &appsv1.Deployment{} },
		"Service":             func() any { return &corev1.Service{} },
		"ServiceAccount":      func() any { return &corev1.ServiceAccount{} },
		"ConfigMap":           func() any { return &corev1.ConfigMap{} },
		"PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
		"NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
		"ClusterRole":         func() any { return &rbacv1.ClusterRole{} },
		"ClusterRoleBinding":  func() any { return &rbacv1.ClusterRoleBinding{} },
		"Role":                func() any { return &rbacv1.Role{} },
		"RoleBinding":         func() any { return &rbacv1.RoleBinding{} },
	}
	untyped := map[string]bool{"ServiceMonitor": true, "PrometheusRule": true}
	cases := []struct {
		name string
		ns   string
		args []string
		// clientConnection.qps and burst as decoded; 0 = not rendered (kube-scheduler's
		// defaults apply)
		qps   float32
		burst int32
	}{
		{"defaults", releaseNS, nil, 200, 400},
		{"every value changed (A)", "sched-system", []string{"-f", fixturePath(t, "values/all-a.yaml")}, 75.5, 150},
		{"every switch off (B)", releaseNS, []string{"-f", fixturePath(t, "values/all-b.yaml")}, 0, 0},
		{"hardened", releaseNS, []string{
			"--set", "scheduler.metrics.tls.secretName=ome-scheduler-metrics-tls",
			"--set", "scheduler.metrics.serviceMonitor.enabled=true",
			"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=ome-scheduler-metrics-tls",
			"--set", "scheduler.metrics.prometheusRule.enabled=true",
			"--set", "scheduler.networkPolicy.enabled=true",
			"--set-json", `scheduler.networkPolicy.from=[{"ipBlock":{"cidr":"10.0.0.0/8"}}]`,
		}, 200, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := renderNS(t, tc.ns, tc.args...)
			for _, d := range r.docs {
				newObj, ok := typed[d.kind()]
				if !ok {
					if !untyped[d.kind()] {
						t.Errorf("%s/%s: no Go type to check it against", d.kind(), d.name())
					}
					continue
				}
				if err := yaml.UnmarshalStrict([]byte(d.text), newObj()); err != nil {
					t.Errorf("%s/%s does not decode strictly: %v", d.kind(), d.name(), err)
				}
				if d.kind() == "ConfigMap" && has(d.obj, "data", "config.yaml") {
					var cfg schedconfigv1.KubeSchedulerConfiguration
					if err := yaml.UnmarshalStrict([]byte(dig(d.obj, "data", "config.yaml").(string)), &cfg); err != nil {
						t.Errorf("config.yaml does not decode strictly into KubeSchedulerConfiguration: %v", err)
					}
					if cfg.EnableProfiling == nil || cfg.EnableContentionProfiling == nil {
						t.Errorf("config.yaml leaves enableProfiling/enableContentionProfiling to kube-scheduler's defaults")
					}
					if cc := cfg.ClientConnection; cc.QPS != tc.qps || cc.Burst != tc.burst {
						t.Errorf("config.yaml clientConnection qps %v, burst %d; want %v, %d", cc.QPS, cc.Burst, tc.qps, tc.burst)
					}
					checkPluginArgs(t, &cfg)
				}
			}
		})
	}
}

// checkPluginArgs decodes every profile's OMEGangPack arguments as the plugin does at startup
// (strictly: an unknown key fails) and validates them.
func checkPluginArgs(t *testing.T, cfg *schedconfigv1.KubeSchedulerConfiguration) {
	t.Helper()
	found := 0
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name != gangpack.Name {
				continue
			}
			found++
			if _, err := gangpack.DecodeArgs(&runtime.Unknown{Raw: pc.Args.Raw, ContentType: runtime.ContentTypeJSON}); err != nil {
				t.Errorf("config.yaml: the OMEGangPack arguments of profile %s do not decode: %v", ptr.Deref(p.SchedulerName, ""), err)
			}
		}
	}
	if found == 0 {
		t.Errorf("config.yaml has no OMEGangPack pluginConfig")
	}
}
