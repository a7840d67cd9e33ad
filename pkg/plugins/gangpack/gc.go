package gangpack

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
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
	pl.ledger.Prune(logger, liveGangs)
	pl.refreshDegraded(liveGangs)
	pl.pruneGroups()
	pl.quality.PrunePending(pl.members.GangPending)
	pl.quality.ForgetStaleKeys(time.Now())
	synced := pl.podGroups != nil && pl.podGroups.synced()
	for _, c := range pl.ledger.Pins() {
		stale := false
		if _, ok := liveGangs[c.Gang]; !ok {
			stale = true
		} else if synced {
			ns, name, _ := cache.SplitMetaNamespaceKey(c.Gang)
			pg, err := pl.podGroups.Get(ns, name)
			if err != nil || pg == nil || string(pg.UID) != c.Owner {
				stale = true
			}
		}
		if stale {
			pl.ledger.Abandon(logger, c.Gang, c.ID, gang.CauseGC)
		}
	}
}
