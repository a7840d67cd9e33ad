package gangpack

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// standaloneWaitMargin is how long past its victims' grace periods a standalone preemptor
// waits for them before it may preempt again.
const standaloneWaitMargin = time.Minute

// carryOut evicts the chosen candidate's victims whole, releases the victim gangs' (and a
// lower-priority holder's) commitments, records the victims so the preemptor does not
// preempt again while they terminate, and for a gang pins and holds the freed domain. It
// nominates a node of the domain, as kube-scheduler's default preemption does.
func (pl *GangPack) carryOut(ctx context.Context, logger klog.Logger, pr *preemptor, c *topology.PreemptionCandidate, units []victimUnit) (*fwk.PostFilterResult, *fwk.Status) {
	var victims []*v1.Pod
	var gangKeys, names []string
	nGangs, nPods := 0, 0
	for _, i := range c.Victims {
		u := &units[i]
		if len(u.gangs) > 0 {
			gangKeys = append(gangKeys, u.gangs...)
			nGangs += len(u.gangs)
		} else {
			nPods++
		}
		for _, q := range u.pods {
			victims = append(victims, q)
			names = append(names, q.Namespace+"/"+q.Name)
		}
	}
	if h := pr.holders[c.Domain]; h != "" && !slices.Contains(gangKeys, h) {
		gangKeys = append(gangKeys, h)
	}
	for _, g := range gangKeys {
		pl.unwind(logger, g, placement.AnyID, causePreempted, false)
	}
	msg := msgPreempted(pr.kind, pr.pod.Namespace, pr.name, c.Domain)
	var firstErr error
	for _, v := range victims {
		if err := pl.evictPod(ctx, logger, pr.pod, v, msg); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	node := nominatedNode(pr, c.Domain, victims)
	pl.preempted.record(pr.key, preemptRecord{domain: c.Domain, node: node, victims: refsOf(victims),
		deadline: pl.now().Add(pl.waitLimit(pr, victims))}, pl.now())
	if pr.planner != nil && pr.group == "" {
		pl.holdDomain(logger, pr, c.Domain, victims)
	}
	preemptionTotal.WithLabelValues(pr.kind, preemptResultPreempted).Inc()
	preemptionVictimsTotal.WithLabelValues(unitGang).Add(float64(nGangs))
	preemptionVictimsTotal.WithLabelValues(unitPod).Add(float64(nPods))
	logger.V(4).Info("gangpack.PostFilter.preempt", "pod", klog.KObj(pr.pod), "gang", pr.ownGang, "domain", c.Domain,
		"victims", names, "victimGangs", nGangs, "victimPods", nPods, "pdbViolations", c.PDBViolations, "nominatedNode", node)
	if firstErr != nil {
		return nil, fwk.AsStatus(fmt.Errorf("preempt for %s/%s: %w", pr.pod.Namespace, pr.pod.Name, firstErr))
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}},
		fwk.NewStatus(fwk.Success)
}

// evictPod evicts one victim: a pod waiting at Permit is rejected; any other gets the
// DisruptionTarget condition and is deleted (guarded by its UID). Either way it gets the
// Preempted event. A victim already gone is no error.
func (pl *GangPack) evictPod(ctx context.Context, logger klog.Logger, preemptor, victim *v1.Pod, msg string) error {
	if wp := pl.handle.GetWaitingPod(victim.UID); wp != nil {
		wp.Reject(Name, msg)
	} else {
		cs := pl.handle.ClientSet()
		cond := &v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, v1.DisruptionTarget),
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonPreemptionByScheduler,
			Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", preemptor.Spec.SchedulerName),
		}
		status := victim.Status.DeepCopy()
		if apipod.UpdatePodCondition(status, cond) {
			if err := util.PatchPodStatus(ctx, cs, victim.Name, victim.Namespace, &victim.Status, status); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}
		}
		uid := victim.UID
		err := cs.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	if rec := pl.handle.EventRecorder(); rec != nil {
		rec.Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting", "%s", msg)
	}
	logger.V(2).Info("Preempted pod", "victim", klog.KObj(victim), "preemptor", klog.KObj(preemptor))
	return nil
}

// holdDomain pins the gang to the freed domain and reserves there the room its victims give
// back, so that nothing else takes it while they terminate.
func (pl *GangPack) holdDomain(logger klog.Logger, pr *preemptor, domain string, victims []*v1.Pod) {
	p, info := pr.planner, pr.planner.info
	freed, pods := freedBy(victims)
	var nodes []topology.Node
	for _, n := range pr.nodes {
		if n.Domain != domain {
			continue
		}
		free := topology.Resources{}
		for r, q := range n.Free {
			free[r] = q + freed[n.Name][r]
		}
		n.Free, n.FreePods = free, n.FreePods+pods[n.Name]
		// preemptNodes' Fits ignore resources (evictions change them), and NodeRoom counts a
		// node a shape fits as room for at least one member: judge resources here, after the
		// evictions, so a node that stays full is no part of the reservation.
		fits := make([]bool, len(n.Fits))
		for s, f := range n.Fits {
			fits[s] = f && s < len(pr.gang.Shapes) && n.FreePods >= 1 && within(pr.gang.Shapes[s], free)
		}
		n.Fits = fits
		nodes = append(nodes, n)
	}
	g := pr.gang
	g.Need = max(info.MinMember-len(p.placed), 1)
	counts, _ := topology.Assign(&g, nodes, g.Need)
	res := slotsOf(&g, nodes, counts)
	snapshot := pl.snapshotCapacity()
	capacity := func(name string) (topology.Resources, int64, bool) {
		free, n, ok := snapshot(name)
		if !ok {
			return nil, 0, false
		}
		for r, q := range freed[name] {
			free[r] += q
		}
		return free, n + pods[name], ok
	}
	c, outcome := pl.store.Pin(placement.PinRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Domain: domain,
		Reserved: res, Capacity: capacity, Remaining: max(info.MinMember-len(p.placed), 0), SoleFit: true, MinMember: info.MinMember})
	switch outcome {
	case placement.Pinned:
		pl.pinned(c, info)
	case placement.HeldByOther:
		logger.V(4).Info("gangpack.PostFilter.preempt_hold_blocked", "gang", info.Key, "domain", domain)
	}
}

// within reports whether a request fits in free.
func within(req, free topology.Resources) bool {
	for r, q := range req {
		if q > 0 && free[r] < q {
			return false
		}
	}
	return true
}

// nominatedNode picks the node of the domain the pod is nominated to: the first by name where
// it fits once the victims are gone, else the domain's first node.
func nominatedNode(pr *preemptor, domain string, victims []*v1.Pod) string {
	freed, pods := freedBy(victims)
	var inDomain []topology.Node
	for _, n := range pr.nodes {
		if n.Domain == domain {
			inDomain = append(inDomain, n)
		}
	}
	sort.Slice(inDomain, func(i, j int) bool { return inDomain[i].Name < inDomain[j].Name })
	cur := pr.gang.Current
	for _, n := range inDomain {
		if cur >= len(n.Fits) || !n.Fits[cur] || n.FreePods+pods[n.Name] < 1 {
			continue
		}
		ok := true
		for r, q := range pr.gang.Shapes[cur] {
			if q > 0 && n.Free[r]+freed[n.Name][r] < q {
				ok = false
				break
			}
		}
		if ok {
			return n.Name
		}
	}
	if len(inDomain) > 0 {
		return inDomain[0].Name
	}
	return ""
}

// freedBy returns, per node, what the victims give back when they are gone.
func freedBy(victims []*v1.Pod) (map[string]topology.Resources, map[string]int64) {
	freed := map[string]topology.Resources{}
	pods := map[string]int64{}
	for _, v := range victims {
		n := v.Spec.NodeName
		if freed[n] == nil {
			freed[n] = topology.Resources{}
		}
		for r, q := range podRequest(v) {
			freed[n][r] += q
		}
		pods[n]++
	}
	return freed, pods
}

// waitLimit bounds the wait on victims: the gang's timeout, or for a standalone pod the
// longest victim grace period plus a margin.
func (pl *GangPack) waitLimit(pr *preemptor, victims []*v1.Pod) time.Duration {
	if pr.planner != nil && pr.planner.info.Timeout > 0 {
		return pr.planner.info.Timeout
	}
	var grace int64 = v1.DefaultTerminationGracePeriodSeconds
	for _, v := range victims {
		if g := v.Spec.TerminationGracePeriodSeconds; g != nil && *g > grace {
			grace = *g
		}
	}
	return time.Duration(grace)*time.Second + standaloneWaitMargin
}

func refsOf(pods []*v1.Pod) []victimRef {
	out := make([]victimRef, len(pods))
	for i, p := range pods {
		out[i] = victimRef{namespace: p.Namespace, name: p.Name, uid: p.UID, node: p.Spec.NodeName}
	}
	return out
}
