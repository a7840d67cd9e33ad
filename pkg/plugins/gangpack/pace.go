package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/pace"
)

// newPacer returns the bind window's pacer (nil when bindWindowMilliseconds is 0), with the
// API client's QPS as its ceiling when the framework has a client configuration.
func newPacer(args *gang.Args, qps float32) *pace.Pacer {
	return pace.New(args.BindWindow(), qps, clock.RealClock{})
}

// paceLoop is PreFilter's first step: a cycle that starts new work (a standalone pod, or a
// member of a gang without a pin) waits while the binds in flight exceed the bind window
// (internal/pace). A member of a pinned gang never waits: its siblings may be waiting at
// Permit for it, and binds only drain.
func (pl *GangPack) paceLoop(ctx context.Context, pod *v1.Pod) {
	if pl.pace == nil {
		return
	}
	if key, _, member := gang.Of(pod); member && pl.ledger.Pinned(key) {
		return
	}
	waited, st := pl.pace.Wait(ctx)
	if waited <= 0 {
		return
	}
	metrics.BindWindowWaitSeconds.Add(waited.Seconds())
	klog.FromContext(ctx).V(4).Info("gangpack.PreFilter.bind_window", "pod", klog.KObj(pod), "inFlight", st.InFlight,
		"limit", st.Limit, "rate", st.Rate, "waited", waited)
}

// bindStarted is Bind's first step, for every pod of the profile.
func (pl *GangPack) bindStarted(uid types.UID) {
	if pl.pace.Started(uid) {
		metrics.BindsInFlight.Inc()
	}
}

// bindFinished ends a pod's binding: bound (PostBind) or not (Unreserve).
func (pl *GangPack) bindFinished(uid types.UID, bound bool) {
	if pl.pace.Finished(uid, bound) {
		metrics.BindsInFlight.Dec()
	}
}
