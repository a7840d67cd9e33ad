package preempt

import (
	"context"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Gang-aware, topology-aware preemption (docs/operations.md, section 8). After a cycle failed
// for lack of room, PostFilter looks for the one domain (for a standalone pod: the one node)
// where evicting whole lower-priority units makes room for the whole preemptor, evicts them,
// and, for a gang, pins and holds that domain while they terminate.

// preemptor is what one PostFilter preempts for: a gang (its member being scheduled) or a
// standalone pod, with the nodes translated for the arithmetic. For a gang, domains are the
// values of its topology key; for a standalone pod, every node is a domain of its own.
type preemptor struct {
	pod      *v1.Pod
	priority int32
	kind     string // metrics.PreemptorGang or metrics.PreemptorPod
	key      string // the preemptions record's key
	name     string // gang (PodGroup) name or pod name, for the Preempted event
	ownGang  string // the preemptor's gang key ("" for a standalone pod)
	gang     topology.Gang
	nodes    []topology.Node
	all      []fwk.NodeInfo
	fit      *gang.PodFit // the current pod's fit, to nominate a node
	// shortfall is the planner's answer for a gang or group that lacks room (nil for a
	// standalone pod).
	shortfall *gang.Shortfall
	// excluded domains may not be chosen (held by a gang of equal or higher priority).
	excluded map[string]bool
	// holders are the lower-priority forming gangs whose reservations overlap a domain (under
	// any topology key), every one released if the domain is chosen.
	holders map[string]sets.Set[string]
	// group is set when the preemptor is a placement group (its unit name, "group:{ns}/{group}"):
	// partners are the partner gangs to place and groupNodes the group planner's nodes.
	group      string
	partners   []topology.Partner
	groupNodes []topology.GroupNode
}

// Preempt is PostFilter for a pod without a cycle pin when preemption is on.
func (e *Evaluator) Preempt(ctx context.Context, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	pr, waiting := e.newPreemptor(logger, pod, m)
	if waiting != nil {
		return waiting.result, waiting.status
	}
	if pr == nil { // not for lack of room: nothing to explain
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return e.noCandidate(logger, pr, msg.ReasonPreemptNever)
	}
	var gain func(string, []*v1.Pod) int64
	if pr.shortfall != nil {
		gain = pr.shortfall.SlotGain
	}
	units := victimUnits(pr.all, pr.priority, pr.ownGang, e.listPDBs(logger), e.iface.UnitOf(), gain)
	units = slices.DeleteFunc(units, func(u victimUnit) bool { return pr.group != "" && u.unit.Name == pr.group })
	if len(units) == 0 {
		return e.noCandidate(logger, pr, msg.ReasonNoLowerPriority)
	}
	var cands []topology.PreemptionCandidate
	if pr.partners != nil {
		cands = topology.GroupPreemptionCandidates(pr.partners, pr.priority, pr.groupNodes, topologyUnits(units))
	} else {
		cands = topology.PreemptionCandidates(&pr.gang, pr.priority, pr.nodes, topologyUnits(units))
	}
	cands = slices.DeleteFunc(cands, func(c topology.PreemptionCandidate) bool { return pr.excluded[c.Domain] })
	for _, c := range cands {
		if len(c.Victims) == 0 { // room without evictions: something else keeps the pod out
			logger.V(4).Info("gangpack.PostFilter.preempt_skip", "pod", klog.KObj(pod), "gang", pr.ownGang, "reason", "room_exists", "domain", c.Domain)
			return nil, fwk.NewStatus(fwk.Unschedulable)
		}
	}
	best, ok := topology.ChoosePreemptionCandidate(cands)
	if !ok {
		return e.noCandidate(logger, pr, msg.ReasonNoDomain(pr.gang.Need))
	}
	return e.carryOut(logger, pr, &cands[best], units)
}

// waitResult is PostFilter's answer for a preemptor that waits on its victims.
type waitResult struct {
	result *fwk.PostFilterResult
	status *fwk.Status
}

// newPreemptor builds the preemptor, or returns nil when the cycle did not fail for lack of
// room; waiting is set when the preemptor already evicted victims that still terminate, or
// when room that Terminating pods give back would let it fit (room_coming.go).
func (e *Evaluator) newPreemptor(logger klog.Logger, pod *v1.Pod, m fwk.NodeToStatusReader) (*preemptor, *waitResult) {
	all, err := e.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, nil
	}
	pr := &preemptor{pod: pod, priority: corev1helpers.PodPriority(pod), all: all, fit: gang.NewPodFit(pod)}
	if key, name, member := gang.Of(pod); member {
		pr.kind, pr.key, pr.name, pr.ownGang = metrics.PreemptorGang, key, name, key
		pr.priority = e.gangPreemptPriority(pod)
		if unitOf := e.iface.UnitOf(); unitOf != nil {
			if g := unitOf(pod); g != "" { // the partners share one preemption and its wait
				pr.group, pr.key = g, g
			}
		}
	} else {
		pr.kind, pr.key, pr.name = metrics.PreemptorPod, podRecordKey(pod), pod.Name
	}
	if w := e.waitingOnVictims(pr, pr.key); w != nil {
		return nil, w
	}
	if pr.group != "" { // a partner that repairs alone waits under its gang's record
		if w := e.waitingOnVictims(pr, pr.ownGang); w != nil {
			return nil, w
		}
	}
	if pr.kind == metrics.PreemptorPod {
		e.standaloneNodes(pr, m)
		if w := e.standaloneRoomComing(pr); w != nil {
			return nil, w
		}
		return pr, nil
	}
	lacks, w := e.gangLacksRoom(logger, pr)
	if !lacks {
		return nil, w
	}
	return pr, nil
}

// waitingOnVictims answers for a preemptor whose victims still terminate: the pod waits,
// nominated to the node chosen then, and nothing is evicted again. The record lasts until
// the victims are gone from the API and from the snapshot (or stuck past their bound), not
// until the preemptor's timeout.
func (e *Evaluator) waitingOnVictims(pr *preemptor, key string) *waitResult {
	r, ok := e.preempted.get(key)
	if !ok {
		return nil
	}
	left := e.victimsLeft(r)
	if left == 0 {
		return nil
	}
	e.evictEscaped(pr, r)
	return &waitResult{
		result: &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: r.node, NominatingMode: fwk.ModeOverride}},
		status: fwk.NewStatus(fwk.Unschedulable, msg.PreemptWaiting(left, r.domain)),
	}
}

// evictEscaped evicts again the victims still bound and not Terminating: a victim waiting at
// Permit is rejected, but when its gang completed at the same moment it was allowed instead
// and bound; an eviction call may also have failed. Each is evicted like any bound victim
// (unless its eviction is under way), so the preemptor does not wait on a pod that will
// never leave.
func (e *Evaluator) evictEscaped(pr *preemptor, r preemptRecord) {
	var escaped []*v1.Pod
	for _, v := range r.victims {
		if cur := e.boundVictim(v); cur != nil && cur.DeletionTimestamp == nil {
			escaped = append(escaped, cur)
		}
	}
	e.evictAsync(pr.pod, escaped, msg.Preempted(pr.kind, pr.pod.Namespace, pr.name, r.domain))
}

// standaloneNodes makes every node a domain of its own. Nodes that a filter rejected as
// unresolvable (a hold, a taint, affinity) are left out: evicting pods cannot change them.
func (e *Evaluator) standaloneNodes(pr *preemptor, m fwk.NodeToStatusReader) {
	f := pr.fit
	pr.gang = topology.Gang{Need: 1, Shapes: []topology.Resources{f.Request}, Siblings: []int{0}}
	names := slices.Collect(maps.Keys(f.Request))
	for _, ni := range pr.all {
		node := ni.Node()
		if node == nil || (m != nil && m.Get(node.Name).Code() == fwk.UnschedulableAndUnresolvable) {
			continue
		}
		free, freePods := gang.NodeFree(ni, names)
		pr.nodes = append(pr.nodes, topology.Node{Name: node.Name, Domain: node.Name, Free: free, FreePods: freePods,
			Fits: []bool{f.Fits(ni, f.Request, 1)}})
	}
}

// markHeldDomains finds, for each domain of the preemptor's nodes, the other forming gangs
// whose reservations overlap it: one under the gang's topology key holding the domain, or
// one under any key reserving room on a node of it. A domain with such a holder of equal or
// higher priority is excluded; the lower-priority holders of a domain are all released if it
// is chosen, so the freed room is the preemptor's.
func (e *Evaluator) markHeldDomains(pr *preemptor, info gang.Info) {
	pr.excluded, pr.holders = map[string]bool{}, map[string]sets.Set[string]{}
	domainOf := make(map[string]string, len(pr.nodes))
	for _, n := range pr.nodes {
		domainOf[n.Name] = n.Domain
	}
	for _, c := range e.iface.Pins() {
		if !c.Forming() || c.Gang == info.Key {
			continue
		}
		overlaps := sets.New[string]()
		if c.Key == info.TopologyKey {
			overlaps.Insert(c.Domain)
		}
		for node := range c.Reserved {
			if d, ok := domainOf[node]; ok {
				overlaps.Insert(d)
			}
		}
		if overlaps.Len() == 0 {
			continue
		}
		lower := e.gangPriority(c.Gang) < pr.priority
		for d := range overlaps {
			switch {
			case !lower:
				pr.excluded[d] = true
			case pr.holders[d] == nil:
				pr.holders[d] = sets.New(c.Gang)
			default:
				pr.holders[d].Insert(c.Gang)
			}
		}
	}
}

// gangPriority is the highest priority among a gang's live pods (math.MaxInt32 when they
// cannot be listed, so an unknown holder is never displaced): a gang is protected, as a
// holder or a victim, by its highest member.
func (e *Evaluator) gangPriority(key string) int32 {
	_, hi, err := e.memberPriorities(key)
	if err != nil {
		return 1<<31 - 1
	}
	return hi
}

// gangPreemptPriority is the priority a gang member preempts with: its own, capped at the
// lowest priority among its gang's live members, so a gang never preempts with a priority
// some of its members lack (for a gang of one priority, that priority).
func (e *Evaluator) gangPreemptPriority(pod *v1.Pod) int32 {
	prio := corev1helpers.PodPriority(pod)
	key, _, _ := gang.Of(pod)
	if lo, _, err := e.memberPriorities(key); err == nil && lo < prio {
		return lo
	}
	return prio
}

// memberPriorities returns the lowest and highest priority among a gang's live pods
// (math.MaxInt32 and 0 when none is live).
func (e *Evaluator) memberPriorities(key string) (lo, hi int32, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, 0, err
	}
	pods, err := e.members.List(ns, name)
	if err != nil {
		return 0, 0, err
	}
	lo, found := int32(1<<31-1), false
	for _, p := range pods {
		if !gang.Live(p) {
			continue
		}
		q := corev1helpers.PodPriority(p)
		if !found || q > hi {
			hi = q
		}
		lo, found = min(lo, q), true
	}
	return lo, hi, nil
}

// listPDBs returns every PodDisruptionBudget (none when the lister is missing or fails).
func (e *Evaluator) listPDBs(logger klog.Logger) []*policy.PodDisruptionBudget {
	if e.pdbs == nil {
		return nil
	}
	pdbs, err := e.pdbs.List(labels.Everything())
	if err != nil {
		logger.V(4).Info("gangpack.PostFilter.pdb_list_failed", "err", err)
		return nil
	}
	return pdbs
}

// noCandidate ends a preemption that found nothing to evict, with the reason in the message.
func (e *Evaluator) noCandidate(logger klog.Logger, pr *preemptor, reason string) (*fwk.PostFilterResult, *fwk.Status) {
	metrics.PreemptionTotal.WithLabelValues(pr.kind, metrics.PreemptResultNoCandidate).Inc()
	logger.V(4).Info("gangpack.PostFilter.preempt", "pod", klog.KObj(pr.pod), "gang", pr.ownGang, "domain", "", "victims", []string{}, "reason", reason)
	return nil, fwk.NewStatus(fwk.Unschedulable, msg.PreemptPrefix+reason)
}
