package gangpack

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// PostFilter unwinds a pinned attempt whose candidates were all filtered out, remembers the
// domain as failed, and retries promptly in another domain; a surplus member's failure
// unwinds nothing. A pod without a cycle pin that failed for lack of room preempts when
// preemption is on (preempt.go); a degraded gang's replacement preempts only inside its
// domain, and when it cannot be repaired there its PodGroup is told (degraded_report.go).
func (pl *GangPack) PostFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	refused := pl.reservedRefusals(m)
	pl.parkIfReserved(klog.FromContext(ctx), cs, pod, refused)
	pin := plan.ReadPin(cs)
	if pin != nil && pin.Surplus {
		// The gang formed without this member: its committed pin (and the group's) stays,
		// and the domain is not a failed one.
		klog.FromContext(ctx).V(4).Info("gangpack.PostFilter.surplus", "pod", klog.KObj(pod), "gang", pin.Gang.Key, "domain", pin.Domain)
		reason := ""
		if m != nil {
			reason = pl.explainReserved(pod, m, refused)
		}
		return pl.nomination(pod, nil), fwk.NewStatus(fwk.Unschedulable, reason)
	}
	if pin == nil { // not pinned: nothing of ours to release
		if pl.args.Preemption {
			res, st := pl.evaluator.Preempt(ctx, pod, m)
			pl.reportUnrepairable(klog.FromContext(ctx), cs, st)
			if st.Code() != fwk.Unschedulable || st.Message() != "" {
				return pl.nomination(pod, res), st
			}
		} else {
			pl.reportUnrepairable(klog.FromContext(ctx), cs, nil)
		}
		// Not for lack of room: say whose reservations, if any, kept the pod out. With nothing
		// to say the status carries no reason at all: kube-scheduler joins every reason into
		// the pod's message with ", ", so an empty one would leave a dangling separator.
		if why := pl.explainReserved(pod, m, refused); why != "" {
			return pl.nomination(pod, nil), fwk.NewStatus(fwk.Unschedulable, why)
		}
		return pl.nomination(pod, nil), fwk.NewStatus(fwk.Unschedulable)
	}
	logger := klog.FromContext(ctx)
	res := pl.ledger.Unwind(logger, pin.Gang.Key, pin.ID, gang.CausePostFilter, true)
	activated := 0
	if res.Released && res.NewFailed && !pin.SoleFit {
		activated = pl.ledger.Activate(logger, metrics.TriggerDomainFailed, []*v1.Pod{pod})
	}
	logger.V(4).Info("gangpack.PostFilter.release", "pod", klog.KObj(pod), "gang", pin.Gang.Key, "domain", pin.Domain,
		"newFailedDomain", res.NewFailed, "activated", activated)
	return pl.nomination(pod, nil), fwk.NewStatus(fwk.Unschedulable, msg.ReservationReleased)
}

// clearNomination is the NominatingInfo that removes a pod's nomination, in the API and in
// kube-scheduler's nominator (schedule_one.go:138 in v1.35.4).
var clearNomination = &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: ""}

// nomination is PostFilter's answer for the pod's nominatedNodeName: res when preemption
// nominated a node; nothing (the nomination stays) while the pod's own preemption still
// holds the room it nominated; otherwise a clear. kube-scheduler keeps a nomination that
// PostFilter leaves as it is (a nil result is ModeNoop, schedule_one.go:185-189), and its
// Filter counts a nominated pod of equal or higher priority on that node (framework.go:
// 1195-1217): a nomination left from an attempt that unwound refuses other pods a node that
// is empty.
func (pl *GangPack) nomination(pod *v1.Pod, res *fwk.PostFilterResult) *fwk.PostFilterResult {
	if res != nil && res.Mode() != fwk.ModeNoop {
		return res
	}
	if pod.Status.NominatedNodeName != "" && pl.evaluator.Nominates(pod) {
		return nil
	}
	return &fwk.PostFilterResult{NominatingInfo: clearNomination}
}

// parkIfReserved parks a pod that Filter refused somewhere because of other gangs'
// reservations, so the next time room is given back wakes it; the generation PreFilter read
// makes sure room given back since then is not missed.
func (pl *GangPack) parkIfReserved(logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, refused []string) {
	if s, ok := gang.ReadState[*requestState](cs, requestStateKey); ok && len(refused) > 0 {
		pl.ledger.ParkBlocked(logger, pod, s.generation)
	}
}

// reservedRefusals returns the nodes Filter refused because of other gangs' reservations.
func (pl *GangPack) reservedRefusals(m fwk.NodeToStatusReader) []string {
	if m == nil {
		return nil
	}
	nodes, err := m.NodesForStatusCode(pl.handle.SnapshotSharedLister().NodeInfos(), fwk.UnschedulableAndUnresolvable)
	if err != nil {
		return nil
	}
	var out []string
	for _, ni := range nodes {
		if n := ni.Node(); n != nil && m.Get(n.Name).Message() == msg.NodeReserved {
			out = append(out, n.Name)
		}
	}
	return out
}

// maxExplained caps how many reserving gangs a wait message names.
const maxExplained = 3

// explainReserved names the forming gangs whose reservations refused the pod, with the room
// each reserves, for PostFilter's message (empty when no reservation was the reason): the
// nodes Filter refused as reserved, or, when PreFilter found every fitting domain reserved,
// every other forming gang.
func (pl *GangPack) explainReserved(pod *v1.Pod, statuses fwk.NodeToStatusReader, refused []string) string {
	own, _, _ := gang.Of(pod)
	gangs := sets.New[string]()
	if st := statuses.Get(""); st != nil && (strings.HasSuffix(st.Message(), msg.ReservedSuffix) || strings.Contains(st.Message(), msg.AdoptReservedInfix)) {
		for _, c := range pl.ledger.Pins() {
			if c.Forming() && c.Gang != own && len(c.Reserved) > 0 {
				gangs.Insert(c.Gang)
			}
		}
	} else {
		for _, n := range refused {
			gangs.Insert(pl.ledger.ReservedOn(n, own).Gangs...)
		}
	}
	if gangs.Len() == 0 {
		return ""
	}
	var parts []string
	names := sets.List(gangs)
	for _, g := range names[:min(len(names), maxExplained)] {
		if c, ok := pl.ledger.Commitment(g); ok {
			parts = append(parts, msg.GangReserves(g, c.Reserved.Members(), len(c.Reserved), c.Domain))
		}
	}
	return msg.ReservedBy(parts, len(names)-len(parts))
}
