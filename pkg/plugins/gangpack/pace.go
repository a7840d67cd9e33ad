package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
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

// paceAssumed is Reserve's first step, for every pod of the profile.
func (pl *GangPack) paceAssumed(pod *v1.Pod) { pl.paced(pl.pace.Assumed(pod.UID)) }

// paceWaiting is Permit's step for a member told to wait. kube-scheduler first writes
// status.nominatedNodeName unless NominatedNodeNameForExpectation is off or the pod already
// carries that node; the member counts as in flight until the informer shows it (paceNominated).
func (pl *GangPack) paceWaiting(pod *v1.Pod, nodeName string) {
	patches := pl.nominates && pod.Status.NominatedNodeName != nodeName
	pl.paced(pl.pace.Waiting(pod.UID, patches))
}

// paceNominated is the pod informer's step for a pod whose nominatedNodeName appeared.
func (pl *GangPack) paceNominated(old, cur *v1.Pod) {
	if cur != nil && cur.Status.NominatedNodeName != "" && (old == nil || old.Status.NominatedNodeName != cur.Status.NominatedNodeName) {
		pl.paced(pl.pace.Nominated(cur.UID))
	}
}

// paceBinding is Bind's first step, for every pod of the profile (OMEGangPack binds first).
func (pl *GangPack) paceBinding(pod *v1.Pod) { pl.paced(pl.pace.Started(pod.UID)) }

// paceFinished ends a pod's binding: bound (PostBind) or not (Unreserve).
func (pl *GangPack) paceFinished(pod *v1.Pod, bound bool) { pl.paced(pl.pace.Finished(pod.UID, bound)) }

func (pl *GangPack) paced(inFlight int) {
	if pl.pace != nil {
		metrics.BindsInFlight.Set(float64(inFlight))
	}
}

// nominatesWaiters reports whether kube-scheduler writes nominatedNodeName before a pod waits
// at Permit (the NominatedNodeNameForExpectation gate).
func nominatesWaiters() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation)
}
