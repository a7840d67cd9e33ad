package gangpack

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Resuming the gangs a previous leader was forming (docs/design.md §12). kube-scheduler
// publishes the node of a member waiting at Permit as its status.nominatedNodeName. Until
// this replica schedules anything, the pod informer's events record the gangs whose pending
// members carry one (noteNomination); the first PreFilter resumes them, before any gang
// plans (resumeNominated): each gang whose nominations still hold is pinned to their domain,
// with a slot reserved on every nominated node, and the others plan as usual.

// noteNomination records a pod event for the nominations of a previous leader: a pending
// member with a nomination is recorded with what its PodGroup says now, anything else is
// forgotten. It does nothing once the replica has scheduled.
func (pl *GangPack) noteNomination(old, cur *v1.Pod) {
	if !pl.ledger.RecordsNominations() {
		return
	}
	if old != nil {
		if key, _, ok := gang.Of(old); ok && (!nominee(cur) || cur.Labels[PodGroupLabel] != old.Labels[PodGroupLabel]) {
			pl.ledger.NotNominee(key, old.UID)
		}
	}
	if !nominee(cur) {
		return
	}
	key, name, _ := gang.Of(cur)
	renominated := old == nil || old.Status.NominatedNodeName != cur.Status.NominatedNodeName
	var seen ledger.NominationSeen
	if renominated && pl.podGroups != nil {
		if pg, err := pl.podGroups.get(cur.Namespace, name); err == nil && pg != nil {
			if info, st := gang.Interpret(pl.args, cur, pg); st == nil {
				seen = ledger.NominationSeen{UID: info.UID, TopologyKey: info.TopologyKey, MinMember: info.MinMember}
			}
		}
	}
	pl.ledger.Nominee(key, cur.UID, seen, renominated)
}

// nominee reports a live, unbound gang member that carries a nomination.
func nominee(p *v1.Pod) bool {
	if p == nil || p.Status.NominatedNodeName == "" || p.Spec.NodeName != "" || !gang.Live(p) {
		return false
	}
	_, _, ok := gang.Of(p)
	return ok
}

// resumeNominated resumes the gangs a previous leader left nominated; only the first PreFilter
// of the replica finds any.
func (pl *GangPack) resumeNominated(logger klog.Logger, nodes []fwk.NodeInfo) {
	for _, n := range pl.ledger.TakeNominated() {
		pl.resumeGang(logger, n, nodes)
	}
}

// resumeGang re-reads the gang's PodGroup and members and has the planner judge the
// nominations (plan.Planner.Resume).
func (pl *GangPack) resumeGang(logger klog.Logger, n ledger.Nominated, nodes []fwk.NodeInfo) {
	ns, name, _ := cache.SplitMetaNamespaceKey(n.Key)
	drop := func(pod *v1.Pod, reason string) {
		logger.V(4).Info("gangpack.pinGang.nominated_dropped", "pod", klog.KObj(pod), "gang", n.Key, "reason", reason)
	}
	pods, err := pl.members.LiveUnbound(ns, name, "")
	if err != nil || pl.podGroups == nil {
		return
	}
	var rep *v1.Pod
	for _, p := range pods {
		if p.Status.NominatedNodeName != "" && (rep == nil || p.Name < rep.Name) {
			rep = p
		}
	}
	if rep == nil {
		drop(nil, plan.NominatedNone)
		return
	}
	pg, err := pl.podGroups.get(ns, name)
	if err != nil || pg == nil {
		drop(rep, plan.NominatedPodGroupGone)
		return
	}
	info, st := gang.Interpret(pl.args, rep, pg)
	switch {
	case st != nil:
		drop(rep, plan.NominatedPodGroupChange)
		return
	case info.Group != nil:
		// A partner is pinned only with its whole placement group: it plans with its group.
		drop(rep, plan.NominatedPartner)
		return
	case n.Seen != (ledger.NominationSeen{}) && n.Seen != ledger.NominationSeen{UID: info.UID, TopologyKey: info.TopologyKey, MinMember: info.MinMember}:
		drop(rep, plan.NominatedPodGroupChange)
		return
	}
	pl.planner.Resume(logger, rep, info, nodes)
}
