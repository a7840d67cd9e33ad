package preempt

import (
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// victimUnit is what preemption evicts as a whole: every placed member of one gang (in any
// domain), or one standalone pod. unit is its figures for the arithmetic.
type victimUnit struct {
	gangs  []string // the unit's gang keys (several for a placement group); none for a standalone pod
	pods   []*v1.Pod
	byNode map[string][]*v1.Pod
	unit   topology.VictimUnit
}

// victimUnits groups the live pods on the snapshot's nodes (bound or assumed, any scheduler)
// into units and returns those whose priority is strictly below priority. A gang's priority
// is the highest of its placed members, so a gang with one member at or above the preemptor's
// priority is never a victim. Terminating pods are not victims (they are already going), and
// the preemptor's own gang (ownGang) never is. PDB violations are counted per unit.
//
// unitOf names the unit of a gang member's gang: its placement group when it has one (the
// partners of a group are evicted together), else "" for the gang itself.
//
// slotGain, when set (a preemptor whose members take DRA devices), gives each unit's
// DeviceSlots back on every node where it has pods.
func victimUnits(all []fwk.NodeInfo, priority int32, ownGang string, pdbs []*policy.PodDisruptionBudget, unitOf func(*v1.Pod) string,
	slotGain func(string, []*v1.Pod) int64) []victimUnit {
	byKey := map[string]*victimUnit{}
	var order []string
	for _, ni := range all {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q == nil || !gang.Live(q) {
				continue
			}
			key, _, member := gang.Of(q)
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
		if slotGain != nil {
			for node, pods := range u.byNode {
				if k := slotGain(node, pods); k > 0 {
					u.unit.Frees[node].Resources[gang.DeviceSlots] = k
				}
			}
		}
		out = append(out, *u)
	}
	return out
}

// add puts a placed pod of the unit on node.
func (u *victimUnit) add(q *v1.Pod, node string) {
	u.pods = append(u.pods, q)
	if u.byNode == nil {
		u.byNode = map[string][]*v1.Pod{}
	}
	u.byNode[node] = append(u.byNode[node], q)
	u.unit.Priority = max(u.unit.Priority, corev1helpers.PodPriority(q))
	f := u.unit.Frees[node]
	if f.Resources == nil {
		f.Resources = topology.Resources{}
	}
	for r, v := range gang.Request(q) {
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
