package devenv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// chartArgs returns the OMEGangPack args the chart renders.
func chartArgs(t *testing.T) map[string]any {
	t.Helper()
	base, err := ChartSchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		t.Fatal(err)
	}
	profile, err := schedulerProfile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := profile["pluginConfig"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == gangpack.Name {
			args, _ := m["args"].(map[string]any)
			return args
		}
	}
	t.Fatalf("the chart configures no pluginConfig for %s:\n%s", gangpack.Name, base)
	return nil
}

// DefaultArgs is what the chart renders for OMEGangPack, one key per line.
func TestDefaultArgsMatchChart(t *testing.T) {
	want := chartArgs(t)
	got := map[string]any{}
	if err := yaml.Unmarshal([]byte(DefaultArgs), &got); err != nil {
		t.Fatalf("DefaultArgs: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultArgs differ from the chart's OMEGangPack args:\nDefaultArgs: %v\nchart:       %v", got, want)
	}
	if lines := strings.Split(DefaultArgs, "\n"); len(lines) != len(want) {
		t.Fatalf("DefaultArgs has %d lines for %d keys, want one key per line", len(lines), len(want))
	}
}

// load decodes a rendered configuration the way kube-scheduler does (strictly, defaulted).
func load(t *testing.T, rendered []byte) *config.KubeSchedulerConfiguration {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, rendered, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatalf("kube-scheduler refuses the rendered configuration: %v\n%s", err, rendered)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != SchedulerName {
		t.Fatalf("profiles %+v, want exactly %s", cfg.Profiles, SchedulerName)
	}
	return cfg
}

func pluginArgs(t *testing.T, prof config.KubeSchedulerProfile, name string) runtime.Object {
	t.Helper()
	for _, pc := range prof.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	t.Fatalf("no pluginConfig for %s", name)
	return nil
}

func unknownArgs(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		t.Fatalf("args are %T, want *runtime.Unknown", obj)
	}
	m := map[string]any{}
	if err := json.Unmarshal(u.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func scoreDisabled(prof config.KubeSchedulerProfile, name string) bool {
	return slices.ContainsFunc(prof.Plugins.Score.Disabled, func(p config.Plugin) bool { return p.Name == name })
}

// The zero profile is the chart's configuration (its client QPS and burst included) plus the
// kubeconfig and without leader election.
func TestZeroProfileIsTheChartConfiguration(t *testing.T) {
	base, err := ChartSchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Profile{}.RenderConfig("/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered configuration of the zero Profile:\n%s", rendered)
	got := load(t, rendered)
	want := load(t, base)
	want.ClientConnection.Kubeconfig = "/kubeconfig"
	want.LeaderElection.LeaderElect = false
	want.LeaderElection.ResourceNamespace = "kube-system"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("zero profile:\n%+v\nwant the chart's configuration with the kubeconfig:\n%+v", got, want)
	}
	if got.LeaderElection.ResourceName != SchedulerName {
		t.Fatalf("lease %s, want %s", got.LeaderElection.ResourceName, SchedulerName)
	}
	if !scoreDisabled(got.Profiles[0], "PodTopologySpread") {
		t.Fatalf("PodTopologySpread score enabled in the zero profile: %+v", got.Profiles[0].Plugins.Score)
	}
}

// Every Profile field changes what it names, and only that.
func TestProfileChanges(t *testing.T) {
	p := Profile{
		Args:                         "topologyKey: \"topology.ome.io/domain\"\ngcIntervalSeconds: 2",
		PercentageOfNodesToScore:     100,
		EnablePodTopologySpreadScore: true,
		LeaderElect:                  true,
		LeaseNamespace:               "ome",
		LeaseDuration:                6 * time.Second,
		PluginConfig: []PluginArgs{
			{Name: "PodTopologySpread", Args: map[string]any{"defaultingType": "List"}},
		},
	}
	got := load(t, []byte(p.Render("/kubeconfig")))
	zero := load(t, []byte(Profile{}.Render("/kubeconfig")))

	le := got.LeaderElection
	if !le.LeaderElect || le.ResourceNamespace != "ome" || le.ResourceName != SchedulerName ||
		le.LeaseDuration.Duration != 6*time.Second || le.RenewDeadline.Duration != 4*time.Second ||
		le.RetryPeriod.Duration != 1200*time.Millisecond {
		t.Fatalf("leader election %+v", le)
	}
	prof := got.Profiles[0]
	if prof.PercentageOfNodesToScore == nil || *prof.PercentageOfNodesToScore != 100 {
		t.Fatalf("percentageOfNodesToScore %v, want 100", prof.PercentageOfNodesToScore)
	}
	if scoreDisabled(prof, "PodTopologySpread") {
		t.Fatalf("PodTopologySpread score still disabled: %+v", prof.Plugins.Score)
	}
	if want := map[string]any{"topologyKey": "topology.ome.io/domain", "gcIntervalSeconds": 2.0}; !reflect.DeepEqual(unknownArgs(t, pluginArgs(t, prof, gangpack.Name)), want) {
		t.Fatalf("OMEGangPack args %v, want %v", unknownArgs(t, pluginArgs(t, prof, gangpack.Name)), want)
	}
	pts, ok := pluginArgs(t, prof, "PodTopologySpread").(*config.PodTopologySpreadArgs)
	if !ok || pts.DefaultingType != config.ListDefaulting {
		t.Fatalf("PodTopologySpread args %+v, want defaultingType List", pluginArgs(t, prof, "PodTopologySpread"))
	}
	if !reflect.DeepEqual(pluginArgs(t, prof, "NodeResourcesFit"), pluginArgs(t, zero.Profiles[0], "NodeResourcesFit")) {
		t.Fatalf("NodeResourcesFit args changed")
	}
	if !reflect.DeepEqual(unknownArgs(t, pluginArgs(t, zero.Profiles[0], gangpack.Name)), chartArgs(t)) {
		t.Fatalf("zero profile's OMEGangPack args are not the chart's")
	}
	if !reflect.DeepEqual(prof.Plugins.MultiPoint, zero.Profiles[0].Plugins.MultiPoint) ||
		!reflect.DeepEqual(prof.Plugins.Score.Enabled, zero.Profiles[0].Plugins.Score.Enabled) {
		t.Fatalf("plugins changed beyond the PodTopologySpread score: %+v", prof.Plugins)
	}
}

// A profile that does not apply is an error, not a silently different configuration.
func TestProfileErrors(t *testing.T) {
	for name, p := range map[string]Profile{
		"args not a mapping":   {Args: "- a\n- b"},
		"unnamed plugin":       {PluginConfig: []PluginArgs{{Args: map[string]any{"a": 1}}}},
		"args not yaml at all": {Args: "a: [b"},
	} {
		if _, err := p.RenderConfig("/kubeconfig"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
