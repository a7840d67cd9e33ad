package gang

import (
	"encoding/json"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// PodFit holds what fits(pod, node) needs about one pod, computed once per cycle.
type PodFit struct {
	pod      *v1.Pod
	Request  topology.Resources
	affinity nodeaffinity.RequiredNodeAffinity
}

func NewPodFit(p *v1.Pod) *PodFit {
	return &PodFit{pod: p, Request: Request(p), affinity: nodeaffinity.GetRequiredNodeAffinity(p)}
}

// Request is the pod's effective request (init containers and overhead included) in the
// planner's units: milli-CPU, bytes, and plain counts for everything else.
func Request(p *v1.Pod) topology.Resources {
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	out := make(topology.Resources, len(rl))
	for name, q := range rl {
		if name == v1.ResourceCPU {
			out[string(name)] = q.MilliValue()
		} else {
			out[string(name)] = q.Value()
		}
	}
	return out
}

// NodeFree returns allocatable minus requested for the named resources (the planner's
// units, as Request), and how many more pods fit. Resources a node does not have count
// as 0 allocatable.
func NodeFree(ni fwk.NodeInfo, names []string) (topology.Resources, int64) {
	alloc, req := ni.GetAllocatable(), ni.GetRequested()
	free := make(topology.Resources, len(names))
	for _, name := range names {
		switch v1.ResourceName(name) {
		case v1.ResourceCPU:
			free[name] = alloc.GetMilliCPU() - req.GetMilliCPU()
		case v1.ResourceMemory:
			free[name] = alloc.GetMemory() - req.GetMemory()
		case v1.ResourceEphemeralStorage:
			free[name] = alloc.GetEphemeralStorage() - req.GetEphemeralStorage()
		default:
			free[name] = alloc.GetScalarResources()[v1.ResourceName(name)] - req.GetScalarResources()[v1.ResourceName(name)]
		}
	}
	return free, int64(alloc.GetAllowedPodNumber() - len(ni.GetPods()))
}

var unschedulableTaint = &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Fits checks the hard node constraints and resource fit of one pod on one node.
// Inter-pod affinity, ports, volumes and spread are left to the built-in filters.
func (f *PodFit) Fits(ni fwk.NodeInfo, free topology.Resources, freePods int64) bool {
	node := ni.Node()
	if node == nil {
		return false
	}
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), f.pod.Spec.Tolerations, unschedulableTaint, false) {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, f.pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	if f.pod.Spec.NodeName != "" && f.pod.Spec.NodeName != node.Name {
		return false
	}
	if ok, err := f.affinity.Match(node); err != nil || !ok {
		return false
	}
	for r, q := range f.Request {
		if q > 0 && free[r] < q {
			return false
		}
	}
	return freePods > 0
}

// ShapeKey groups members whose fit and size are identical.
func ShapeKey(p *v1.Pod) string {
	var required *v1.NodeSelector
	var preferred []v1.PreferredSchedulingTerm
	if p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil {
		required = p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		preferred = p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	// Preferred node affinity is part of the shape: members plan each by their own terms
	// (domain preferences, docs/design.md §4.1).
	b, _ := json.Marshal(struct {
		R  topology.Resources
		S  map[string]string
		A  *v1.NodeSelector
		P  []v1.PreferredSchedulingTerm `json:",omitempty"`
		T  []v1.Toleration
		N  string
		PO v1.ResourceList
		C  []v1.PodResourceClaim `json:",omitempty"`
	}{Request(p), p.Spec.NodeSelector, required, preferred, p.Spec.Tolerations, p.Spec.NodeName, p.Spec.Overhead, p.Spec.ResourceClaims})
	return string(b)
}

// termMatcher is a parsed required pod (anti-)affinity term.
type termMatcher struct {
	selector   labels.Selector
	namespaces map[string]struct{} // nil = every namespace
}

func newTermMatcher(owner *v1.Pod, t *v1.PodAffinityTerm) (*termMatcher, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return nil, err
	}
	m := &termMatcher{selector: sel}
	if t.NamespaceSelector == nil {
		m.namespaces = map[string]struct{}{}
		if len(t.Namespaces) == 0 {
			m.namespaces[owner.Namespace] = struct{}{}
		}
		for _, ns := range t.Namespaces {
			m.namespaces[ns] = struct{}{}
		}
	}
	return m, nil
}

func (m *termMatcher) matches(p *v1.Pod) bool {
	if m.namespaces != nil {
		if _, ok := m.namespaces[p.Namespace]; !ok {
			return false
		}
	}
	return m.selector.Matches(labels.Set(p.Labels))
}

func RequiredAffinityTerms(p *v1.Pod) []v1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

func RequiredAntiAffinityTerms(p *v1.Pod) []v1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// Apart reports whether members must stay one per node when any template's required
// anti-affinity term matches any template. Unparsable terms count as matching.
func Apart(templates []*v1.Pod) bool {
	// Most gangs carry no anti-affinity: then nothing is matched (and no template's labels
	// are keyed, which cost a sort per template in every member's planning).
	if !slices.ContainsFunc(templates, func(t *v1.Pod) bool { return len(RequiredAntiAffinityTerms(t)) > 0 }) {
		return false
	}
	// Deduplicate the matched side by namespace and labels: gangs are mostly identical pods.
	type target struct {
		ns  string
		pod *v1.Pod
	}
	seen := map[string]struct{}{}
	var targets []*v1.Pod
	for _, t := range templates {
		k := t.Namespace + "\x00" + labels.Set(t.Labels).String()
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			targets = append(targets, t)
		}
	}
	checked := map[string]struct{}{}
	for _, owner := range templates {
		terms := RequiredAntiAffinityTerms(owner)
		if len(terms) == 0 {
			continue
		}
		b, _ := json.Marshal(struct {
			NS string
			T  []v1.PodAffinityTerm
		}{owner.Namespace, terms})
		if _, ok := checked[string(b)]; ok {
			continue
		}
		checked[string(b)] = struct{}{}
		for i := range terms {
			m, err := newTermMatcher(owner, &terms[i])
			if err != nil {
				return true
			}
			for _, t := range targets {
				if m.matches(t) {
					return true
				}
			}
		}
	}
	return false
}

// HardSpread reports whether the pod carries a DoNotSchedule topology spread constraint.
func HardSpread(p *v1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			return true
		}
	}
	return false
}

// WaitsForSibling returns the first sibling (in template order, excluding owner) that the
// owner must wait for (the sibling-affinity wait): a required affinity term that neither the owner nor a placed
// member satisfies, but that sibling does. nil when the owner need not wait.
func WaitsForSibling(owner *v1.Pod, siblings, placed []*v1.Pod) *v1.Pod {
	terms := RequiredAffinityTerms(owner)
	for i := range terms {
		m, err := newTermMatcher(owner, &terms[i])
		if err != nil {
			continue
		}
		if m.matches(owner) {
			continue
		}
		satisfied := false
		for _, p := range placed {
			if m.matches(p) {
				satisfied = true
				break
			}
		}
		if satisfied {
			continue
		}
		for _, s := range siblings {
			if s.Name != owner.Name && m.matches(s) {
				return s
			}
		}
	}
	return nil
}

// NodeFreeAll is NodeFree for every resource the node has.
func NodeFreeAll(ni fwk.NodeInfo) (topology.Resources, int64) {
	names := []string{string(v1.ResourceCPU), string(v1.ResourceMemory), string(v1.ResourceEphemeralStorage)}
	for r := range ni.GetAllocatable().GetScalarResources() {
		names = append(names, string(r))
	}
	return NodeFree(ni, names)
}
