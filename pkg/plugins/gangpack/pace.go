package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/clock"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/pace"
)

// newPacer returns the bind window's pacer (nil when bindWindowMilliseconds is 0), with the
// API client's QPS as its ceiling when the framework has a client configuration, and the
// in-flight gauge as its observer.
func newPacer(args *gang.Args, qps float32) *pace.Pacer {
	p := pace.New(args.BindWindow(), qps, clock.RealClock{})
	p.Observe(func(n int) { metrics.BindsInFlight.Set(float64(n)) })
	return p
}

// paceLoop is PreFilter's first step: a cycle that starts new work (a standalone pod, or a
// member of a gang without a forming pin) waits while the binds in flight exceed the bind
// window (internal/pace). A member of a forming gang never waits: its siblings may be
// waiting at Permit for it. Members of a committed gang (surplus members) are new work.
//
// The framework took the cycle's snapshot before PreFilter, so after a wait it is up to
// MaxWaitWindows windows old. paceLoop then returns the nodes the wait did not change (the
// node informer has the same version as the snapshot); PreFilter keeps the cycle to them.
// nil: no wait, or no node informer (every node).
func (pl *GangPack) paceLoop(ctx context.Context, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	if pl.pace == nil {
		return nil
	}
	if key, _, member := gang.Of(pod); member && pl.ledger.Forming(key) {
		return nil
	}
	waited, st := pl.pace.Wait(ctx)
	if waited <= 0 {
		return nil
	}
	metrics.BindWindowWaitSeconds.Add(waited.Seconds())
	fresh := pl.unchangedNodes(nodes)
	changed := 0
	if fresh != nil {
		changed = len(nodes) - len(fresh.NodeNames)
	}
	klog.FromContext(ctx).V(4).Info("gangpack.PreFilter.bind_window", "pod", klog.KObj(pod), "inFlight", st.InFlight,
		"limit", st.Limit, "rate", st.Rate, "waited", waited, "nodesChanged", changed)
	return fresh
}

// unchangedNodes returns the snapshot's nodes whose informer copy is the snapshot's version;
// nil without a node informer. A node deleted, cordoned, tainted or relabelled since the
// snapshot was taken is left out.
func (pl *GangPack) unchangedNodes(nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	if pl.nodes == nil {
		return nil
	}
	out := sets.New[string]()
	for _, ni := range nodes {
		snap := ni.Node()
		if snap == nil {
			continue
		}
		cur, err := pl.nodes.Get(snap.Name)
		if err == nil && (cur == snap || cur.ResourceVersion != "" && cur.ResourceVersion == snap.ResourceVersion) {
			out.Insert(snap.Name)
		}
	}
	return &fwk.PreFilterResult{NodeNames: out}
}

// keepNodes returns the nodes that res admits (all of them when res is nil).
func keepNodes(nodes []fwk.NodeInfo, res *fwk.PreFilterResult) []fwk.NodeInfo {
	if res.AllNodes() {
		return nodes
	}
	out := make([]fwk.NodeInfo, 0, len(res.NodeNames))
	for _, ni := range nodes {
		if ni.Node() != nil && res.NodeNames.Has(ni.Node().Name) {
			out = append(out, ni)
		}
	}
	return out
}

// paceAssumed is Reserve's first step, for every pod of the profile.
func (pl *GangPack) paceAssumed(pod *v1.Pod) { pl.pace.Assumed(pod.UID) }

// paceWaiting is Permit's step for a member told to wait: it counts until the informer shows
// kube-scheduler's nominatedNodeName PATCH, if one is to show (paceNomination).
func (pl *GangPack) paceWaiting(pod *v1.Pod, nodeName string) {
	pl.paceNomination(pod, nodeName, pl.pace.Waiting)
}

// paceAdmitted is Permit's step for a pod it lets through: the pod counts on its way to
// PreBind only while a nominatedNodeName PATCH may be pending (kube-scheduler sends one when
// a PreBind pre-flight has work, which is when PreBind may take long), and not in PreBind.
func (pl *GangPack) paceAdmitted(pod *v1.Pod, nodeName string) {
	pl.paceNomination(pod, nodeName, pl.pace.Admitted)
}

// paceNomination records Permit's decision with whether a nominatedNodeName PATCH for the pod
// on nodeName may still show in the informer: kube-scheduler sends it only when
// NominatedNodeNameForExpectation is on and the popped pod does not carry the node, and the
// informer shows a change only when the pod it has (not the popped copy, which can be older)
// does not carry it either. An event that came between the read and the record is caught by
// reading again.
func (pl *GangPack) paceNomination(pod *v1.Pod, nodeName string, record func(uid types.UID, patches bool) int) {
	if pl.pace == nil {
		return
	}
	patches := pl.nominates && pod.Status.NominatedNodeName != nodeName && pl.nominatedNode(pod) != nodeName
	record(pod.UID, patches)
	if patches && pl.nominatedNode(pod) == nodeName {
		pl.pace.Nominated(pod.UID)
	}
}

// nominatedNode returns the pod's nominatedNodeName as the pod informer has it ("" unknown).
func (pl *GangPack) nominatedNode(pod *v1.Pod) string {
	if pl.pods == nil {
		return ""
	}
	cur, err := pl.pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID {
		return ""
	}
	return cur.Status.NominatedNodeName
}

// paceNominated is the pod informer's step for a pod whose nominatedNodeName appeared.
func (pl *GangPack) paceNominated(old, cur *v1.Pod) {
	if cur != nil && cur.Status.NominatedNodeName != "" && (old == nil || old.Status.NominatedNodeName != cur.Status.NominatedNodeName) {
		pl.pace.Nominated(cur.UID)
	}
}

// paceBinding is Bind's first step, for every pod of the profile (OMEGangPack binds first).
func (pl *GangPack) paceBinding(pod *v1.Pod) { pl.pace.Started(pod.UID) }

// paceFinished ends a pod's binding: bound (PostBind) or not (Unreserve).
func (pl *GangPack) paceFinished(pod *v1.Pod, bound bool) { pl.pace.Finished(pod.UID, bound) }

// nominatesWaiters reports whether kube-scheduler writes nominatedNodeName in the binding
// cycle (the NominatedNodeNameForExpectation gate).
func nominatesWaiters() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation)
}
