package gangpack

import (
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// victimUnit is what preemption evicts as a whole: every placed member of one gang (in any
// domain), or one standalone pod. unit is its figures for the arithmetic.
type victimUnit struct {
	gangs []string // the unit's gang keys (several for a placement group); none for a standalone pod
	pods  []*v1.Pod
	unit  topology.VictimUnit
}

// victimUnits groups the live pods on the snapshot's nodes (bound or assumed, any scheduler)
// into units and returns those whose priority is strictly below priority. A gang's priority
// is the highest of its placed members, so a gang with one member at or above the preemptor's
// priority is never a victim. Terminating pods are not victims (they are already going), and
// the preemptor's own gang (ownGang) never is. PDB violations are counted per unit.
//
// unitOf names the unit of a gang member's gang: its placement group when it has one (the
// partners of a group are evicted together), else "" for the gang itself.
func victimUnits(all []fwk.NodeInfo, priority int32, ownGang string, pdbs []*policy.PodDisruptionBudget, unitOf func(*v1.Pod) string) []victimUnit {
	byKey := map[string]*victimUnit{}
	var order []string
	for _, ni := range all {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q == nil || !live(q) {
				continue
			}
			key, _, member := gangOf(q)
			if member && key == ownGang {
				continue
			}
			id := key
			if !member {
				id = "pod:" + q.Namespace + "/" + q.Name
			} else if unitOf != nil {
				if g := unitOf(q); g != "" {
					id = g
				}
			}
			u := byKey[id]
			if u == nil {
				u = &victimUnit{unit: topology.VictimUnit{Name: id, Priority: corev1helpers.PodPriority(q),
					Frees: map[string]topology.NodeFree{}}}
				byKey[id] = u
				order = append(order, id)
			}
			if member && !slices.Contains(u.gangs, key) {
				u.gangs = append(u.gangs, key)
			}
			u.add(q, node.Name)
		}
	}
	sort.Strings(order)
	var out []victimUnit
	for _, id := range order {
		u := byKey[id]
		if u.unit.Priority >= priority {
			continue
		}
		u.unit.Pods = len(u.pods)
		u.unit.PDBViolations = pdbViolations(pdbs, u.pods)
		out = append(out, *u)
	}
	return out
}

// add puts a placed pod of the unit on node.
func (u *victimUnit) add(q *v1.Pod, node string) {
	u.pods = append(u.pods, q)
	u.unit.Priority = max(u.unit.Priority, corev1helpers.PodPriority(q))
	f := u.unit.Frees[node]
	if f.Resources == nil {
		f.Resources = topology.Resources{}
	}
	for r, v := range podRequest(q) {
		f.Resources[r] += v
	}
	f.Pods++
	u.unit.Frees[node] = f
}

// topologyUnits returns the arithmetic's view of the units.
func topologyUnits(units []victimUnit) []topology.VictimUnit {
	out := make([]topology.VictimUnit, len(units))
	for i := range units {
		out[i] = units[i].unit
	}
	return out
}

// pdbViolations counts the pods of one unit whose eviction a PodDisruptionBudget does not
// allow, as kube-scheduler's default preemption counts them: each matching budget's allowed
// disruptions are used up pod by pod, and a pod already listed as disrupted costs nothing.
func pdbViolations(pdbs []*policy.PodDisruptionBudget, pods []*v1.Pod) int {
	if len(pdbs) == 0 {
		return 0
	}
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	n := 0
	for _, p := range pods {
		violates := false
		for i, pdb := range pdbs {
			if pdb.Namespace != p.Namespace || !pdbSelects(pdb, p) {
				continue
			}
			if _, disrupted := pdb.Status.DisruptedPods[p.Name]; disrupted {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				violates = true
			}
		}
		if violates {
			n++
		}
	}
	return n
}

// pdbSelects reports whether a budget's selector selects the pod; an empty or invalid
// selector selects nothing (as kube-scheduler treats it).
func pdbSelects(pdb *policy.PodDisruptionBudget, p *v1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(p.Labels))
}

// victimRef identifies one evicted pod.
type victimRef struct {
	namespace, name string
	uid             types.UID
	node            string // the node it occupied when evicted
}

// preemptRecord is one preemption a gang (or standalone pod) made and now waits on.
type preemptRecord struct {
	domain   string
	node     string // the nominated node
	victims  []victimRef
	deadline time.Time
}

// preemptions remembers, per preemptor (gang key, or "pod/" + UID), the victims it evicted,
// so it does not preempt again while they terminate. A record ends when every victim is gone
// or at its deadline (the gang's timeout).
type preemptions struct {
	mu sync.Mutex
	m  map[string]preemptRecord
}

func newPreemptions() *preemptions { return &preemptions{m: map[string]preemptRecord{}} }

// record remembers a preemption and drops the records past their deadline.
func (p *preemptions) record(key string, r preemptRecord, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, old := range p.m {
		if now.After(old.deadline) {
			delete(p.m, k)
		}
	}
	p.m[key] = r
}

// pending returns the preemptor's record and how many of its victims still exist (exists
// says whether a victim is still there); a record whose victims are all gone, or that passed
// its deadline, is forgotten and ok is false.
func (p *preemptions) pending(key string, now time.Time, exists func(victimRef) bool) (r preemptRecord, left int, ok bool) {
	p.mu.Lock()
	r, ok = p.m[key]
	p.mu.Unlock()
	if !ok {
		return r, 0, false
	}
	if now.Before(r.deadline) {
		for _, v := range r.victims {
			if exists(v) {
				left++
			}
		}
	}
	if left == 0 {
		p.forget(key, r.deadline)
		return r, 0, false
	}
	return r, left, true
}

// forget drops the record under key if it is still the one with this deadline.
func (p *preemptions) forget(key string, deadline time.Time) {
	p.mu.Lock()
	if cur, ok := p.m[key]; ok && cur.deadline.Equal(deadline) {
		delete(p.m, key)
	}
	p.mu.Unlock()
}

// victimExists reports whether the victim still occupies a node: the pod informer shows it
// (same UID) bound, or the scheduling snapshot still counts it on its node. The informer
// learns of a deletion before the snapshot does; a cycle whose snapshot still holds the
// victim sees its domain without room, and the record must last until the snapshot agrees,
// or that cycle would take the missing room for a reason to preempt elsewhere. A victim that
// was only waiting at Permit is rejected, not deleted: it stays in the informer unbound and
// holds nothing once rejected, so the preemptor does not wait on it.
func (gs *gangs) victimExists(v victimRef) bool {
	cur, err := gs.members.lister.Pods(v.namespace).Get(v.name)
	if err == nil && cur.UID == v.uid && cur.Spec.NodeName != "" {
		return true
	}
	return gs.inSnapshot(v)
}

// inSnapshot reports whether the current scheduling snapshot counts the victim on its node.
func (gs *gangs) inSnapshot(v victimRef) bool {
	if v.node == "" || gs.handle == nil {
		return false
	}
	ni, err := gs.handle.SnapshotSharedLister().NodeInfos().Get(v.node)
	if err != nil || ni == nil {
		return false
	}
	for _, p := range ni.GetPods() {
		if p.GetPod().UID == v.uid {
			return true
		}
	}
	return false
}

// awaitingVictims reports whether the preemptor (key) evicted victims for domain that are
// still terminating.
func (gs *gangs) awaitingVictims(key, domain string) bool {
	r, _, ok := gs.preempted.pending(key, gs.now(), gs.victimExists)
	return ok && r.domain == domain
}

// groupUnitOf names the victim unit of a gang member's placement group ("group:{ns}/{group}"),
// or "" when its gang has none: a placement group's partners are one victim unit.
func (pl *GangPack) groupUnitOf() func(*v1.Pod) string {
	if pl.args.PlacementGroupLabel == "" || pl.podGroups == nil {
		return nil
	}
	seen := map[string]string{}
	return func(q *v1.Pod) string {
		key, name, _ := gangOf(q)
		if g, ok := seen[key]; ok {
			return g
		}
		g := ""
		if pg, err := pl.podGroups.get(q.Namespace, name); err == nil && pg != nil {
			if v := groupNameOf(pl.args, q, pg); v != "" {
				g = "group:" + q.Namespace + "/" + v
			}
		}
		seen[key] = g
		return g
	}
}
