package gangpack

import (
	"context"
	"time"

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
	liveGangs, err := pl.members.LiveGangs()
	if err != nil {
		return
	}
	for _, k := range pl.incomplete.keys() {
		if _, ok := liveGangs[k]; !ok {
			pl.incomplete.remove(k)
		}
	}
	isLive := func(k string) bool { _, ok := liveGangs[k]; return ok }
	pl.reps.prune(isLive)
	pl.permitWoke.prune(isLive)
	pl.waits.prune(pl.members.Pending)
	for _, k := range pl.failed.Gangs() {
		if _, ok := liveGangs[k]; !ok {
			pl.forgetFailed(k, "")
		}
	}
	for _, p := range pl.blocked.snapshot() {
		if !pl.members.Pending(p.Namespace, p.Name, p.UID) {
			pl.blocked.remove(p)
		}
	}
	pl.pruneGroups()
	pl.quality.pruneParked(pl.gangPending)
	pl.quality.forgetStaleKeys(pl.store, time.Now())
	if pl.doubts.prune(time.Now()) {
		pl.wakeBlocked(logger)
	}
	pl.reserved.prune(pl.members.Pending)
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
			pl.forgetFailed(c.Gang, "")
		}
	}
}
