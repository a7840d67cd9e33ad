package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// DefaultArgs are the chart's default OMEGangPack arguments, one key per line. They are the
// args block of the chart's default configuration (TestDefaultArgsMatchChart keeps the two
// equal); callers use them as a base for test-specific args.
const DefaultArgs = `podGroupTopologyKeyAnnotation: "ome.io/topology-key"
unsupportedPlacementGroupLabel: ""
placementGroupLabel: "ome.io/placement-group"
defaultPermitTimeoutSeconds: 600
podGroupSyncTimeoutSeconds: 30
gcIntervalSeconds: 60
standaloneDomainPacking: true`

// Profile describes the test-only changes to the scheduler configuration the chart renders
// with its default values (ChartSchedulerConfig). The zero value is the chart's configuration
// (preemption off, PodTopologySpread score off, MostAllocated on cpu and memory, OMEGangPack
// with the chart's args, the chart's client QPS and burst) without leader election.
type Profile struct {
	// Args replaces the OMEGangPack args block (a YAML mapping, e.g. "key: value" lines);
	// "" keeps the chart's args.
	Args string
	// PercentageOfNodesToScore sets the profile's percentage (0 = the chart's setting).
	PercentageOfNodesToScore int
	// EnablePodTopologySpreadScore keeps the PodTopologySpread score plugin enabled.
	EnablePodTopologySpreadScore bool
	// LeaderElect turns leader election on, with the chart's Lease (ome-scheduler) in
	// LeaseNamespace ("" = kube-system, which every control plane has).
	LeaderElect    bool
	LeaseNamespace string
	// PluginConfig items are added to the profile's pluginConfig list; an item naming a
	// plugin the configuration already configures replaces that item.
	PluginConfig []PluginArgs
	// LeaseDuration shortens leader election for tests (renew deadline 2/3 of it, retry
	// period 1/5); zero keeps kube-scheduler's defaults (15s/10s/2s).
	LeaseDuration time.Duration
}

// PluginArgs is one pluginConfig item: a plugin name and its args.
type PluginArgs struct {
	Name string
	Args map[string]any
}

// Render returns the KubeSchedulerConfiguration for the profile, connecting with kubeconfig.
// It panics when the chart cannot be rendered (bin/helm missing: run `make bin/helm`) or the
// profile does not apply; RenderConfig returns those as errors.
func (p Profile) Render(kubeconfig string) string {
	b, err := p.RenderConfig(kubeconfig)
	if err != nil {
		panic(fmt.Sprintf("devenv: %v", err))
	}
	return string(b)
}

// RenderConfig is Render returning errors: the chart's default configuration with the
// profile's changes applied.
func (p Profile) RenderConfig(kubeconfig string) ([]byte, error) {
	base, err := ChartSchedulerConfig()
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		return nil, fmt.Errorf("parse the chart's scheduler configuration: %w", err)
	}
	if err := p.apply(cfg, kubeconfig); err != nil {
		return nil, fmt.Errorf("apply the test profile to the chart's scheduler configuration: %w", err)
	}
	return yaml.Marshal(cfg)
}

func (p Profile) apply(cfg map[string]any, kubeconfig string) error {
	cc, err := child(cfg, "clientConnection")
	if err != nil {
		return err
	}
	// Only the kubeconfig: qps and burst stay the chart's (scheduler.clientConnection), so
	// the tests run with the client rate limit the chart ships.
	cc["kubeconfig"] = kubeconfig

	le, err := child(cfg, "leaderElection")
	if err != nil {
		return err
	}
	le["leaderElect"] = p.LeaderElect
	ns := p.LeaseNamespace
	if ns == "" {
		ns = "kube-system"
	}
	le["resourceNamespace"] = ns
	if d := p.LeaseDuration; d > 0 {
		le["leaseDuration"] = d.String()
		le["renewDeadline"] = (d * 2 / 3).String()
		le["retryPeriod"] = (d / 5).String()
	}

	profile, err := schedulerProfile(cfg)
	if err != nil {
		return err
	}
	if p.PercentageOfNodesToScore > 0 {
		profile["percentageOfNodesToScore"] = p.PercentageOfNodesToScore
	}
	if p.EnablePodTopologySpreadScore {
		if err := enableScore(profile, "PodTopologySpread"); err != nil {
			return err
		}
	}
	if p.Args != "" {
		args := map[string]any{}
		if err := yaml.Unmarshal([]byte(p.Args), &args); err != nil {
			return fmt.Errorf("parse Profile.Args: %w", err)
		}
		if err := setPluginArgs(profile, PluginArgs{Name: gangpack.Name, Args: args}, false); err != nil {
			return err
		}
	}
	for _, pc := range p.PluginConfig {
		if err := setPluginArgs(profile, pc, true); err != nil {
			return err
		}
	}
	return nil
}

// child returns m[key] as a mapping, creating it when absent.
func child(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		c := map[string]any{}
		m[key] = c
		return c, nil
	}
	c, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a mapping", key, v)
	}
	return c, nil
}

// schedulerProfile returns the chart's only profile, which must be SchedulerName's.
func schedulerProfile(cfg map[string]any) (map[string]any, error) {
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) != 1 {
		return nil, fmt.Errorf("want exactly one profile, got %d", len(profiles))
	}
	profile, ok := profiles[0].(map[string]any)
	if !ok || profile["schedulerName"] != SchedulerName {
		return nil, fmt.Errorf("the profile is not schedulerName %s: %v", SchedulerName, profiles[0])
	}
	return profile, nil
}

// enableScore removes plugin from the profile's disabled score plugins.
func enableScore(profile map[string]any, plugin string) error {
	plugins, err := child(profile, "plugins")
	if err != nil {
		return err
	}
	score, err := child(plugins, "score")
	if err != nil {
		return err
	}
	disabled, _ := score["disabled"].([]any)
	kept := disabled[:0:0]
	for _, d := range disabled {
		if m, ok := d.(map[string]any); ok && m["name"] == plugin {
			continue
		}
		kept = append(kept, d)
	}
	if len(kept) == 0 {
		delete(score, "disabled")
	} else {
		score["disabled"] = kept
	}
	return nil
}

// setPluginArgs replaces the args of pc.Name's pluginConfig item; when there is none it
// appends the item if add is set and fails otherwise.
func setPluginArgs(profile map[string]any, pc PluginArgs, add bool) error {
	if pc.Name == "" {
		return errors.New("a pluginConfig item needs a plugin name")
	}
	items, _ := profile["pluginConfig"].([]any)
	item := map[string]any{"name": pc.Name}
	if pc.Args != nil {
		item["args"] = pc.Args
	}
	for i, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == pc.Name {
			items[i] = item
			return nil
		}
	}
	if !add {
		return fmt.Errorf("the chart configures no pluginConfig for %s", pc.Name)
	}
	profile["pluginConfig"] = append(items, item)
	return nil
}

// Scheduler is an in-process ome-scheduler (the real kube-scheduler app with OMEGangPack)
// without secure serving.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

var runMu sync.Mutex // app.Run registers process-wide configz state

// StartScheduler starts ome-scheduler in this process against the control plane.
func StartScheduler(ctx context.Context, cp *ControlPlane, p Profile) (*Scheduler, error) {
	path := filepath.Join(cp.Dir, fmt.Sprintf("scheduler-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(p.Render(cp.KubeConfigPath)), 0o600); err != nil {
		return nil, err
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(gangpack.Name, gangpack.New), app.WithPlugin(gangpack.SortName, gangpack.NewSort))
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Scheduler{cancel: cancel, done: make(chan struct{})}
	runMu.Lock()
	configz.Delete("componentconfig")
	go func() {
		defer close(s.done)
		s.err = app.Run(ctx, cc, sched)
	}()
	// Give Run a moment to register configz before another scheduler may start.
	time.Sleep(50 * time.Millisecond)
	runMu.Unlock()
	return s, nil
}

// Stop stops the scheduler and waits for it to exit.
func (s *Scheduler) Stop() {
	if s == nil {
		return
	}
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
	}
}
