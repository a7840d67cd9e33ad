// Package gangpack implements the OMEGangPack scheduling plugin: every gang (the pods of one
// PodGroup) lands inside one topology domain, bound all or nothing, and standalone pods pack
// into partly used domains. The behaviour is specified in shared/spec/placement.md; each
// extension point lives in the file named after it.
package gangpack

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Name is the plugin's name in the scheduler configuration.
const Name = "OMEGangPack"

// PodGroupLabel marks a gang member; its value names the PodGroup in the pod's namespace.
const PodGroupLabel = "scheduling.x-k8s.io/pod-group"

// GangPack is the OMEGangPack plugin.
type GangPack struct {
	args   *Args
	handle fwk.Handle

	podGroups *podGroupReader // nil = no reader wired (M01)
	members   *memberLister

	store     *placement.Store
	failed    *placement.FailedDomains
	attempts  *attemptMap
	reserved  *reservedNodes
	blocked   *podSet
	templates *keySet

	// active is set by the first PreFilter: a standby replica makes no activations.
	active atomic.Bool
	// registerPodGroupEvents is true when the PodGroup resource was served at construction.
	registerPodGroupEvents bool
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
	_ fwk.PostBindPlugin    = &GangPack{}
	_ fwk.EnqueueExtensions = &GangPack{}
)

// New builds the plugin: it validates the arguments, wires the PodGroup informer and the
// member index, and starts garbage collection.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	registerMetrics()
	pl := newPlugin(args, h)
	logger := klog.FromContext(ctx).WithValues("plugin", Name)

	if h.SharedInformerFactory() != nil {
		ml, err := newMemberLister(h.SharedInformerFactory().Core().V1().Pods())
		if err != nil {
			return nil, fmt.Errorf("add pod-group index to the pod informer: %w", err)
		}
		pl.members = ml
	}
	if cfg := h.KubeConfig(); cfg != nil {
		r, served, err := newPodGroupReader(ctx, cfg, h.ClientSet(), pl.onPodGroupChange)
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
	if pl.members != nil {
		go pl.runGC(ctx, time.Duration(*args.GCIntervalSeconds)*time.Second)
	}
	return pl, nil
}

func newPlugin(args *Args, h fwk.Handle) *GangPack {
	return &GangPack{
		args:      args,
		handle:    h,
		store:     placement.NewStore(),
		failed:    placement.NewFailedDomains(),
		attempts:  newAttemptMap(),
		reserved:  newReservedNodes(),
		blocked:   newPodSet(),
		templates: newKeySet(),
	}
}

// Name returns the plugin name.
func (pl *GangPack) Name() string { return Name }

// gangInfo is what PreFilter validated about a gang.
type gangInfo struct {
	Key         string
	Namespace   string
	Name        string
	UID         string
	MinMember   int
	TopologyKey string
	Timeout     time.Duration
}

func (g gangInfo) owner() placement.GangOwner {
	return placement.GangOwner{Gang: g.Key, Owner: g.UID}
}

// gangOf returns the gang key and PodGroup name of a pod; ok is false for standalone pods.
func gangOf(p *v1.Pod) (key, name string, ok bool) {
	name = p.Labels[PodGroupLabel]
	if name == "" {
		return "", "", false
	}
	return p.Namespace + "/" + name, name, true
}

// podKey identifies a pod for the plugin's bookkeeping: its UID, or namespace/name.
func podKey(p *v1.Pod) string {
	if p.UID != "" {
		return string(p.UID)
	}
	return p.Namespace + "/" + p.Name
}

func (pl *GangPack) setGauge() { pinnedGroups.Set(float64(pl.store.Len())) }
