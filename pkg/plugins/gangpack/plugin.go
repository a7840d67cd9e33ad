// Package gangpack implements the OMEGangPack scheduling plugin: every gang (the pods of one
// PodGroup) lands inside one topology domain, bound all or nothing, and standalone pods pack
// into partly used domains. docs/design.md explains the behaviour and docs/reference.md lists
// its arguments, messages and metrics; each extension point lives in the file named after it.
package gangpack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/pace"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/preempt"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/quality"
)

// Name is the plugin's name in the scheduler configuration.
const Name = gang.PluginName

// PodGroupLabel marks a gang member; its value names the PodGroup in the pod's namespace.
const PodGroupLabel = gang.Label

// GangPack is the OMEGangPack plugin: its arguments, its readers, and the ledger, the one owner of
// the state that lives across scheduling cycles. Each extension point is a file of its own
// that reads the cycle, asks the ledger, and answers the framework.
type GangPack struct {
	args      *gang.Args
	podGroups *podGroupReader
	// registerPodGroupEvents is true when the PodGroup resource was served at construction.
	registerPodGroupEvents bool
	// ledger is the one owner of the state that lives across scheduling cycles.
	ledger *ledger.Ledger
	// dra reads DRA claims and devices (dra.go); nil when devices are not counted.
	dra plan.Devices
	// members lists a gang's pods from the scheduler's shared pod informer.
	members *gang.Members
	// nodes reads node labels outside scheduling cycles (Bind's placement annotations).
	nodes corelisters.NodeLister
	// pods reads pods as the informer has them now (the bind window's nominations).
	pods   corelisters.PodLister
	handle fwk.Handle
	// ctx and logger are for work outside a scheduling cycle (GC, eviction calls, wake-ups).
	ctx    context.Context
	logger klog.Logger

	quality *quality.Tracker // per-domain series and pending gangs of the quality gauges
	// evaluator is gang-aware preemption (evaluator.go), with its records.
	evaluator *preempt.Evaluator
	// planner is PreFilter's decision (planning.go) with its caches.
	planner *plan.Planner
	// pace is the bind window (pace.go): binds in flight and how fast they drain.
	pace *pace.Pacer
	// labels finds out whether the API server copies the Binding's labels (labels.go).
	labels labelCheck
	// nominates: kube-scheduler writes nominatedNodeName before a pod waits at Permit.
	nominates bool
}

var (
	_ fwk.PreFilterPlugin   = &GangPack{}
	_ fwk.FilterPlugin      = &GangPack{}
	_ fwk.PostFilterPlugin  = &GangPack{}
	_ fwk.PreScorePlugin    = &GangPack{}
	_ fwk.ScorePlugin       = &GangPack{}
	_ fwk.ScoreExtensions   = &GangPack{}
	_ fwk.ReservePlugin     = &GangPack{}
	_ fwk.PermitPlugin      = &GangPack{}
	_ fwk.BindPlugin        = &GangPack{}
	_ fwk.PostBindPlugin    = &GangPack{}
	_ fwk.EnqueueExtensions = &GangPack{}
)

// profiles maps each scheduler instance (by its shared informer factory) to whether a profile
// of it already enabled the plugin: pins and holds are per plugin instance, so two profiles
// could each hold the same room.
var profiles sync.Map

// New builds the plugin: it validates the arguments, wires the PodGroup informer and the
// member index, and starts garbage collection.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := gang.DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	if h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's shared informer factory", Name)
	}
	if h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's snapshot lister", Name)
	}
	if _, dup := profiles.LoadOrStore(h.SharedInformerFactory(), true); dup {
		return nil, errors.New(msg.TwoProfiles)
	}
	metrics.Register()
	if args.TopologyKey != "" { // the configured key's degraded-gang series exists from startup
		metrics.SetDegraded(map[string]int{args.TopologyKey: 0})
	}
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	ml, err := gang.NewMembers(h.SharedInformerFactory().Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("add pod-group index to the pod informer: %w", err)
	}
	nodes := h.SharedInformerFactory().Core().V1().Nodes()
	pl, err := newPlugin(klog.NewContext(ctx, logger), args, h, ml, nodes, ledger.Options{})
	if err != nil {
		return nil, err
	}
	if args.Preemption {
		pl.evaluator.UsePDBs(h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister())
	}
	pl.nodes = nodes.Lister()
	if err := pl.watchMembers(h.SharedInformerFactory().Core().V1().Pods().Informer()); err != nil {
		return nil, fmt.Errorf("watch pods for gang member changes: %w", err)
	}
	if err := pl.ledger.WatchDoubts(h.SharedInformerFactory().Core().V1().Pods().Informer()); err != nil {
		return nil, fmt.Errorf("watch pods for bindings in doubt: %w", err)
	}
	if cfg := h.KubeConfig(); cfg != nil {
		r, served, err := newPodGroupReader(ctx, cfg, h.ClientSet(), pl.ledger.OnPodGroupChange)
		if err != nil {
			return nil, err
		}
		pl.podGroups = r
		pl.registerPodGroupEvents = served
		if args.PodGroupSyncTimeoutSeconds != nil {
			timeout := time.Duration(*args.PodGroupSyncTimeoutSeconds) * time.Second
			if !r.waitForSync(ctx, timeout) {
				logger.Info("Warning: PodGroup informer did not sync; gang pods wait until it does", "timeout", timeout, "crdServed", served)
			}
		}
	}
	instances.Store(h.SharedInformerFactory(), pl)
	serveDebug(pl)
	go pl.runGC(ctx, time.Duration(*args.GCIntervalSeconds)*time.Second)
	return pl, nil
}

// newPlugin builds the plugin's parts; nodes, when not nil, feeds the planner's domain index;
// lo sets the ledger's clock, timers and goroutine starter (zero: the real ones).
func newPlugin(ctx context.Context, args *gang.Args, h fwk.Handle, ml *gang.Members, nodes coreinformers.NodeInformer, lo ledger.Options) (*GangPack, error) {
	ml.OnlyScheduler(h.ProfileName())
	pl := &GangPack{
		args:    args,
		members: ml,
		handle:  h,
		ctx:     ctx,
		logger:  klog.FromContext(ctx),
		quality: quality.New(),
	}
	pl.ledger = ledger.New(ctx, h, ml, pl.quality.HeldChanged, lo)
	pl.evaluator = preempt.New(ctx, h, ml, nil, preemption{pl}, pl.ledger.Now)
	if d := newDRADevices(ctx, h); d != nil {
		pl.dra = d
	}
	planner, err := plan.New(plan.Options{Args: args, Reader: pl.ledger, Effects: pl.ledger, Members: ml,
		Nodes: func() fwk.NodeInfoLister { return h.SnapshotSharedLister().NodeInfos() }, NodeInformer: nodes,
		Quality: pl.quality, PodGroups: planPodGroups{pl}, Victims: pl.evaluator, Devices: pl.dra})
	if err != nil {
		return nil, fmt.Errorf("build the planner (the domain index watches nodes): %w", err)
	}
	pl.planner = planner
	var qps float32
	if cfg := h.KubeConfig(); cfg != nil {
		qps = cfg.QPS
	}
	pl.pace, pl.nominates = newPacer(args, qps), nominatesWaiters()
	pl.pods = h.SharedInformerFactory().Core().V1().Pods().Lister()
	return pl, nil
}

// Name returns the plugin name.
func (pl *GangPack) Name() string { return Name }

// Args are the plugin's arguments (docs/reference.md lists them).
type Args = gang.Args

// DecodeArgs decodes the plugin's arguments as New does: strictly (an unknown or misspelt key
// is an error naming it and the valid ones), then validated.
func DecodeArgs(obj runtime.Object) (*Args, error) { return gang.DecodeArgs(obj) }
