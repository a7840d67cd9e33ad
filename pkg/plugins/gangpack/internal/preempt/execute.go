package preempt

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// standaloneWaitMargin is how long past its victims' grace periods a standalone preemptor's
// nominated node stays protected from lower-priority gangs while the preemptor is pending.
const standaloneWaitMargin = time.Minute

// carryOut evicts the chosen candidate's victims whole, releases the victim gangs' (and
// every lower-priority holder's) commitments, records the victims so the preemptor does not
// preempt again while they terminate, and for a gang pins and holds the freed domain. It
// nominates a node of the domain, as kube-scheduler's default preemption does. The record
// comes before any API call, and the calls run off the scheduling cycle (evictAsync).
func (e *Evaluator) carryOut(logger klog.Logger, pr *preemptor, c *topology.PreemptionCandidate, units []victimUnit) (*fwk.PostFilterResult, *fwk.Status) {
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
	for _, h := range sets.List(pr.holders[c.Domain]) {
		if !slices.Contains(gangKeys, h) {
			gangKeys = append(gangKeys, h)
		}
	}
	for _, g := range gangKeys {
		e.iface.Release(logger, g)
	}
	node := nominatedNode(pr, c.Domain, victims)
	rec := e.newRecord(pr, c.Domain, node, victims)
	e.preempted.record(pr.key, rec, e.recordLive)
	if rec.pod.uid != "" && node != "" {
		// The protection set gangs' planning aside; a gang it refused waits for a hold to
		// lift. The preemptor's binding wakes such gangs (the assigned-pod hint), and this
		// wakes them when the protection ends otherwise: the bound passes, or the preemptor
		// was deleted while pending.
		e.iface.WakeBlockedAfter(rec.pod.uid, rec.protectUntil.Sub(e.now()))
	}
	if pr.shortfall != nil && pr.partners == nil {
		e.iface.Hold(logger, pr.shortfall, pr.nodes, c.Domain, victims)
	}
	e.evictAsync(pr.pod, victims, msg.Preempted(pr.kind, pr.pod.Namespace, pr.name, c.Domain))
	metrics.PreemptionTotal.WithLabelValues(pr.kind, metrics.PreemptResultPreempted).Inc()
	metrics.PreemptionVictimsTotal.WithLabelValues(metrics.UnitGang).Add(float64(nGangs))
	metrics.PreemptionVictimsTotal.WithLabelValues(metrics.UnitPod).Add(float64(nPods))
	logger.V(4).Info("gangpack.PostFilter.preempt", "pod", klog.KObj(pr.pod), "gang", pr.ownGang, "domain", c.Domain,
		"victims", names, "victimGangs", nGangs, "victimPods", nPods, "pdbViolations", c.PDBViolations, "nominatedNode", node)
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}},
		fwk.NewStatus(fwk.Success)
}

// newRecord is the record of a preemption: its victims and, for a standalone preemptor, the
// protection of its nominated node (its victims' longest grace period plus a margin).
func (e *Evaluator) newRecord(pr *preemptor, domain, node string, victims []*v1.Pod) preemptRecord {
	r := preemptRecord{domain: domain, node: node, victims: refsOf(victims)}
	r.request, r.priority = pr.fit.Request, pr.priority
	if pr.kind != metrics.PreemptorPod {
		r.nominee = victimRef{namespace: pr.pod.Namespace, name: pr.pod.Name, uid: pr.pod.UID}
		r.gang = pr.ownGang
		return r
	}
	var grace int64 = v1.DefaultTerminationGracePeriodSeconds
	for _, v := range victims {
		if g := v.Spec.TerminationGracePeriodSeconds; g != nil && *g > grace {
			grace = *g
		}
	}
	r.pod = victimRef{namespace: pr.pod.Namespace, name: pr.pod.Name, uid: pr.pod.UID}
	r.protectUntil = e.now().Add(time.Duration(grace)*time.Second + standaloneWaitMargin)
	return r
}

// evictAsync evicts the victims: a pod waiting at Permit is rejected at once (no API call);
// every other gets the DisruptionTarget condition and is deleted by one goroutine under the
// plugin's context, off the scheduling cycle, as kube-scheduler's asynchronous preemption
// does. A victim whose eviction is already under way is skipped. Failures are logged; a
// victim that stays bound is evicted again by evictEscaped while the preemptor waits.
func (e *Evaluator) evictAsync(preemptor *v1.Pod, victims []*v1.Pod, message string) {
	var calls []*v1.Pod
	for _, v := range victims {
		if wp := e.handle.GetWaitingPod(v.UID); wp != nil {
			wp.Reject(gang.PluginName, message)
			e.preemptedEvent(preemptor, v, message)
			continue
		}
		if e.evicting.start(v.UID, e.now()) {
			calls = append(calls, v)
		}
	}
	if len(calls) == 0 {
		return
	}
	e.iface.Go(func() {
		for _, v := range calls {
			err := e.deleteVictim(e.ctx, preemptor, v)
			if err != nil {
				e.logger.V(2).Info("Evicting a preemption victim failed", "victim", klog.KObj(v), "preemptor", klog.KObj(preemptor), "err", err)
			} else {
				e.preemptedEvent(preemptor, v, message)
			}
			e.evicting.done(v.UID, err == nil, e.now())
		}
	})
}

// deleteVictim gives a victim the DisruptionTarget condition and deletes it (guarded by its
// UID). A victim already gone is no error.
func (e *Evaluator) deleteVictim(ctx context.Context, preemptor, victim *v1.Pod) error {
	cs := e.handle.ClientSet()
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
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// preemptedEvent records the Preempted event on a victim.
func (e *Evaluator) preemptedEvent(preemptor, victim *v1.Pod, message string) {
	if rec := e.handle.EventRecorder(); rec != nil {
		rec.Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting", "%s", message)
	}
	e.logger.V(2).Info("Preempted pod", "victim", klog.KObj(victim), "preemptor", klog.KObj(preemptor))
}

// nominatedNode picks the node of the domain the pod is nominated to: the first by name where
// it fits once the victims are gone, else the domain's first node.
func nominatedNode(pr *preemptor, domain string, victims []*v1.Pod) string {
	freed, pods := gang.FreedBy(victims)
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

func refsOf(pods []*v1.Pod) []victimRef {
	out := make([]victimRef, len(pods))
	for i, p := range pods {
		out[i] = victimRef{namespace: p.Namespace, name: p.Name, uid: p.UID, node: p.Spec.NodeName}
	}
	return out
}
