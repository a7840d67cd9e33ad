package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// DefaultArgs are the chart's default OMEGangPack arguments, as rendered in its ConfigMap.
const DefaultArgs = `podGroupTopologyKeyAnnotation: "ome.io/topology-key"
unsupportedPlacementGroupLabel: "ome.io/placement-group"
defaultPermitTimeoutSeconds: 600
podGroupSyncTimeoutSeconds: 30
gcIntervalSeconds: 60
standaloneDomainPacking: true`

// Profile describes the scheduler configuration for a test. The zero value is the chart's
// default profile (preemption off, PodTopologySpread score off, MostAllocated on cpu and
// memory, OMEGangPack with DefaultArgs), without leader election.
type Profile struct {
	// Args replaces the OMEGangPack args block (YAML, one key per line).
	Args string
	// PercentageOfNodesToScore sets the profile's percentage (0 = unset).
	PercentageOfNodesToScore int
	// EnablePodTopologySpreadScore keeps the PodTopologySpread score plugin enabled.
	EnablePodTopologySpreadScore bool
	// LeaderElect turns leader election on, with Lease ome-scheduler in LeaseNamespace.
	LeaderElect    bool
	LeaseNamespace string
	// PluginConfig is appended to the profile's pluginConfig list (YAML list items indented
	// by 6 spaces, e.g. "      - name: PodTopologySpread\n        args: ...").
	PluginConfig string
	// LeaseDuration shortens leader election for tests (renew deadline 2/3 of it, retry
	// period 1/5); zero keeps kube-scheduler's defaults (15s/10s/2s).
	LeaseDuration time.Duration
}

// Render returns the KubeSchedulerConfiguration for the profile, connecting with kubeconfig.
func (p Profile) Render(kubeconfig string) string {
	args := p.Args
	if args == "" {
		args = DefaultArgs
	}
	var b strings.Builder
	b.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
	fmt.Fprintf(&b, "clientConnection:\n  kubeconfig: %q\n  qps: 200\n  burst: 400\n", kubeconfig)
	ns := p.LeaseNamespace
	if ns == "" {
		ns = "kube-system"
	}
	fmt.Fprintf(&b, "leaderElection:\n  leaderElect: %t\n  resourceName: ome-scheduler\n  resourceNamespace: %s\n", p.LeaderElect, ns)
	if d := p.LeaseDuration; d > 0 {
		fmt.Fprintf(&b, "  leaseDuration: %s\n  renewDeadline: %s\n  retryPeriod: %s\n", d, d*2/3, d/5)
	}
	b.WriteString("profiles:\n  - schedulerName: ome-scheduler\n")
	if p.PercentageOfNodesToScore > 0 {
		fmt.Fprintf(&b, "    percentageOfNodesToScore: %d\n", p.PercentageOfNodesToScore)
	}
	b.WriteString(`    plugins:
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
`)
	if !p.EnablePodTopologySpreadScore {
		b.WriteString("        disabled:\n          - name: PodTopologySpread\n")
	}
	b.WriteString("    pluginConfig:\n      - name: OMEGangPack\n        args:\n")
	for _, line := range strings.Split(strings.TrimSpace(args), "\n") {
		b.WriteString("          " + strings.TrimSpace(line) + "\n")
	}
	b.WriteString(`      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
`)
	if p.PluginConfig != "" {
		b.WriteString(strings.TrimRight(p.PluginConfig, "\n") + "\n")
	}
	return b.String()
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
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(gangpack.Name, gangpack.New))
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
