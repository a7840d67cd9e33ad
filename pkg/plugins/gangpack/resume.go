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
// with a slot reserved on every nominated node, and the others plan as usual. Only pods of
// this profile's scheduler name count: another scheduler's pods may carry the same pod-group
// label (gang.Members.OnlyScheduler).

// noteNomination records a pod event for the nominations of a previous leader: a pending
// member with a nomination is recorded with what its PodGroup says now, anything else is
// forgotten. It does nothing once the replica has scheduled.
func (pl *GangPack) noteNomination(old, cur *v1.Pod) {
	if !pl.ledger.RecordsNominations() {
		return
	}
	if old != nil {
		if key, _, ok := gang.Of(old); ok && (!pl.nominee(cur) || cur.Labels[PodGroupLabel] != old.Labels[PodGroupLabel]) {
			pl.ledger.NotNominee(key, old.UID)
		}
	}
	if !pl.nominee(cur) {
		return
	}
	key, name, _ := gang.Of(cur)
	renominated := old == nil || old.Status.NominatedNodeName != cur.Status.NominatedNodeName
	var seen ledger.NominationSeen
	if renominated && pl.podGroups != nil {
		if pg, err := pl.podGroups.Get(cur.Namespace, name); err == nil && pg != nil {
			if info, st := gang.Interpret(pl.args, cur, pg); st == nil {
				seen = ledger.NominationSeen{UID: info.UID, TopologyKey: info.TopologyKey, MinMember: info.MinMember}
			}
		}
	}
	pl.ledger.Nominee(key, cur.UID, seen, renominated)
}

// nominee reports a live, unbound gang member of this scheduler that carries a nomination.
func (pl *GangPack) nominee(p *v1.Pod) bool {
	if p == nil || p.Status.NominatedNodeName == "" || p.Spec.NodeName != "" || !gang.Live(p) || !pl.members.Ours(p) {
		return false
	}
	_, _, ok := gang.Of(p)
	return ok
}

// resumeNominated resumes the gangs a previous leader left nominated; only the first PreFilter
// of the replica finds any. Every gang's nominated slots come before any gang's other slots:
// a gang's rest avoids the nodes the gangs resumed after it are nominated to, when it fits so.
func (pl *GangPack) resumeNominated(logger klog.Logger, nodes []fwk.NodeInfo) {
	var gangs []resumable
	for _, n := range pl.ledger.TakeNominated() {
		if g, ok := pl.resumable(logger, n); ok {
			gangs = append(gangs, g)
		}
	}
	for i, g := range gangs {
		var later []*v1.Pod
		for _, o := range gangs[i+1:] {
			later = append(later, o.nominated...)
		}
		pl.planner.Resume(logger, g.rep, g.info, nodes, later)
	}
}

// resumable is a nominated gang the planner judges: its representative, what its PodGroup
// says, and its nominated members.
type resumable struct {
	rep       *v1.Pod
	info      gang.Info
	nominated []*v1.Pod
}

// resumable re-reads the gang's PodGroup and members; ok is false (and the reason logged)
// when the gang is not judged (plan.Planner.Resume judges the others).
func (pl *GangPack) resumable(logger klog.Logger, n ledger.Nominated) (resumable, bool) {
	ns, name, _ := cache.SplitMetaNamespaceKey(n.Key)
	drop := func(pod *v1.Pod, reason string) (resumable, bool) {
		logger.V(4).Info("gangpack.pinGang.nominated_dropped", "pod", klog.KObj(pod), "gang", n.Key, "reason", reason)
		return resumable{}, false
	}
	pods, err := pl.members.LiveUnbound(ns, name, "")
	if err != nil || pl.podGroups == nil {
		return resumable{}, false
	}
	var g resumable
	for _, p := range pods {
		if p.Status.NominatedNodeName == "" {
			continue
		}
		g.nominated = append(g.nominated, p)
		if g.rep == nil || p.Name < g.rep.Name {
			g.rep = p
		}
	}
	if g.rep == nil {
		return drop(nil, plan.NominatedNone)
	}
	pg, err := pl.podGroups.Get(ns, name)
	if err != nil || pg == nil {
		return drop(g.rep, plan.NominatedPodGroupGone)
	}
	info, st := gang.Interpret(pl.args, g.rep, pg)
	switch {
	case st != nil:
		return drop(g.rep, plan.NominatedPodGroupChange)
	case info.Group != nil:
		// A partner is pinned only with its whole placement group: it plans with its group.
		return drop(g.rep, plan.NominatedPartner)
	case n.Seen != (ledger.NominationSeen{}) && n.Seen != ledger.NominationSeen{UID: info.UID, TopologyKey: info.TopologyKey, MinMember: info.MinMember}:
		return drop(g.rep, plan.NominatedPodGroupChange)
	}
	g.info = info
	return g, true
}
