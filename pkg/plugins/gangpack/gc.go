package gangpack

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// runGC releases pins of dead or re-created gangs every interval until
// ctx ends.
func (pl *GangPack) runGC(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(context.Context) (bool, error) {
		pl.gcOnce(logger)
		return false, nil
	})
}

// gcOnce is one GC tick.
func (pl *GangPack) gcOnce(logger klog.Logger) {
	liveGangs, err := pl.members.liveGangs()
	if err != nil {
		return
	}
	for _, k := range pl.incomplete.keys() {
		if _, ok := liveGangs[k]; !ok {
			pl.incomplete.remove(k)
		}
	}
	for _, k := range pl.failed.Gangs() {
		if _, ok := liveGangs[k]; !ok {
			pl.failed.ClearGang(k)
		}
	}
	for _, p := range pl.blocked.snapshot() {
		cur, err := pl.members.lister.Pods(p.Namespace).Get(p.Name)
		if errors.IsNotFound(err) || (err == nil && (cur.Spec.NodeName != "" || !live(cur))) {
			pl.blocked.remove(p)
		}
	}
	pl.quality.pruneParked(pl.gangPending)
	pl.quality.forgetStaleKeys(pl.store, time.Now())
	pl.doubts.prune(time.Now())
	pl.reserved.prune(func(ns, name string, uid types.UID) bool {
		cur, err := pl.members.lister.Pods(ns).Get(name)
		return err == nil && cur.UID == uid && cur.Spec.NodeName == "" && live(cur)
	})
	synced := pl.podGroups != nil && pl.podGroups.synced()
	for _, c := range pl.store.List() {
		stale := false
		if _, ok := liveGangs[c.Gang]; !ok {
			stale = true
		} else if synced {
			ns, name, _ := cache.SplitMetaNamespaceKey(c.Gang)
			pg, err := pl.podGroups.get(ns, name)
			if err != nil || pg == nil || string(pg.UID) != c.Owner {
				stale = true
			}
		}
		if stale {
			pl.unwind(logger, c.Gang, c.ID, causeGC, false)
			pl.failed.ClearGang(c.Gang)
		}
	}
}
