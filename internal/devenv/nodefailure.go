package devenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Categories of a node failure's replacement by what its survivors' domain offered when the
// nodes failed.
const (
	RepairRoom        = "room"        // free room for every replacement of the domain's gangs
	RepairVictims     = "victims"     // room once lower-priority pods there are evicted
	RepairNone        = "none"        // not even then
	RepairNoSurvivors = "nosurvivors" // the gang lost every bound member
	RepairSplit       = "split"       // the survivors were already in more than one domain
)

// NodeFailure is a node failure planned on a cluster of bound gangs (the node-failure repair
// measurements, docs/benchmarks.md "Repair and failover"): the nodes that fail, the pods
// force-deleted with them, one replacement per gang member lost, and the survivors (bound
// members of the gangs hit that are on healthy nodes).
type NodeFailure struct {
	Nodes        []string
	Deleted      []*v1.Pod
	Replacements []Replacement
	Survivors    map[types.UID]bool
	GangsHit     map[string]bool   // namespace/pod-group
	DomainOf     map[string]string // node -> domain, every node before the failure
}

// Replacement is the pod a controller creates for a lost gang member.
type Replacement struct {
	Of       *v1.Pod // the lost member it replaces
	Gang     string  // namespace/pod-group
	Domain   string  // the survivors' domain; "" without survivors or when they are split
	Category string  // RepairRoom, RepairVictims, ...
}

// NodeRoom is one healthy node of a domain: free GPUs, and GPUs held by pods of lower
// priority than every gang hit in the domain.
type NodeRoom struct{ Free, Lower int64 }

// PlanNodeFailure picks percent % of the nodes (at least one), at random with the seed among
// the nodes that run a bound gang member, so that every failure needs a repair; domains are
// the values of domainKey.
func PlanNodeFailure(nodes []*v1.Node, pods []*v1.Pod, domainKey string, percent int, seed uint64) NodeFailure {
	plan := NodeFailure{Survivors: map[types.UID]bool{}, GangsHit: map[string]bool{}, DomainOf: map[string]string{}}
	alloc := map[string]int64{}
	for _, n := range nodes {
		q := n.Status.Allocatable[GPU]
		plan.DomainOf[n.Name], alloc[n.Name] = n.Labels[domainKey], q.Value()
	}
	byNode := map[string][]*v1.Pod{}
	byGang := map[string][]*v1.Pod{}
	var candidates []string
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		if g := GangOf(p); g != "" {
			byGang[g] = append(byGang[g], p)
			candidates = append(candidates, p.Spec.NodeName)
		}
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	rng := rand.New(rand.NewPCG(seed, seed))
	rng.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	k := min(len(candidates), max(1, (len(nodes)*percent+50)/100))
	plan.Nodes = candidates[:k]
	failed := map[string]bool{}
	for _, n := range plan.Nodes {
		failed[n] = true
		plan.Deleted = append(plan.Deleted, byNode[n]...)
	}
	gangs := make([]string, 0, len(byGang))
	for g := range byGang {
		gangs = append(gangs, g)
	}
	sort.Strings(gangs)
	for _, g := range gangs {
		var lost []*v1.Pod
		domains := map[string]bool{}
		for _, p := range byGang[g] {
			if failed[p.Spec.NodeName] {
				lost = append(lost, p)
			} else {
				domains[plan.DomainOf[p.Spec.NodeName]] = true
			}
		}
		if len(lost) == 0 {
			continue
		}
		plan.GangsHit[g] = true
		for _, p := range byGang[g] {
			if !failed[p.Spec.NodeName] {
				plan.Survivors[p.UID] = true
			}
		}
		domain, category := "", RepairNoSurvivors
		switch len(domains) {
		case 0:
		case 1:
			for d := range domains {
				domain = d
			}
		default:
			category = RepairSplit
		}
		for _, p := range lost {
			plan.Replacements = append(plan.Replacements, Replacement{Of: p, Gang: g, Domain: domain, Category: category})
		}
	}
	plan.classify(alloc, byNode, failed)
	return plan
}

// classify sets the category of the replacements that have a survivors' domain: all of a
// domain's replacements together against its healthy nodes.
func (plan *NodeFailure) classify(alloc map[string]int64, byNode map[string][]*v1.Pod, failed map[string]bool) {
	byDomain := map[string][]int{}
	for i, r := range plan.Replacements {
		if r.Domain != "" {
			byDomain[r.Domain] = append(byDomain[r.Domain], i)
		}
	}
	for domain, idx := range byDomain {
		var need []int64
		prio := int32(1 << 30)
		for _, i := range idx {
			need = append(need, PodGPUs(plan.Replacements[i].Of))
			prio = min(prio, priorityOf(plan.Replacements[i].Of))
		}
		var room []NodeRoom
		for n, d := range plan.DomainOf {
			if d != domain || failed[n] {
				continue
			}
			r := NodeRoom{Free: alloc[n]}
			for _, p := range byNode[n] {
				r.Free -= PodGPUs(p)
				if priorityOf(p) < prio {
					r.Lower += PodGPUs(p)
				}
			}
			room = append(room, r)
		}
		category := DomainCategory(room, need)
		for _, i := range idx {
			plan.Replacements[i].Category = category
		}
	}
}

// DomainCategory: room when every need fits the nodes' free GPUs (first fit, largest need
// first), victims when it fits once the lower-priority GPUs count as free, none otherwise.
func DomainCategory(room []NodeRoom, need []int64) string {
	fits := func(withLower bool) bool {
		left := make([]int64, len(room))
		for i, r := range room {
			left[i] = r.Free
			if withLower {
				left[i] += r.Lower
			}
		}
		sorted := slices.Clone(need)
		slices.SortFunc(sorted, func(a, b int64) int { return int(b - a) })
		for _, n := range sorted {
			placed := false
			for i := range left {
				if left[i] >= n {
					left[i] -= n
					placed = true
					break
				}
			}
			if !placed {
				return false
			}
		}
		return true
	}
	switch {
	case fits(false):
		return RepairRoom
	case fits(true):
		return RepairVictims
	default:
		return RepairNone
	}
}

// GangOf is the pod's gang as namespace/pod-group, "" for a standalone pod.
func GangOf(p *v1.Pod) string {
	if g := p.Labels[PodGroupLabel]; g != "" {
		return p.Namespace + "/" + g
	}
	return ""
}

func priorityOf(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// PodGPUs is the GPUs the pod's containers request.
func PodGPUs(p *v1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[GPU]; ok {
			n += q.Value()
		}
	}
	return n
}

// Fail carries the failure out as a node failure and a workload controller would: the Node
// objects deleted, their pods force-deleted (grace 0, as the pod garbage collector does for
// pods of a node that is gone), then one replacement created per lost member. It returns, by
// the index of Replacements, when each replacement's create call returned and its UID (zero
// when the create failed); errors are joined, the failure goes on past them.
func (f NodeFailure) Fail(ctx context.Context, c kubernetes.Interface) ([]time.Time, []types.UID, error) {
	var errs []error
	for _, n := range f.Nodes {
		if err := c.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("delete node %s: %w", n, err))
		}
	}
	for _, p := range f.Deleted {
		if err := c.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			errs = append(errs, fmt.Errorf("force-delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	created := make([]time.Time, len(f.Replacements))
	uids := make([]types.UID, len(f.Replacements))
	for i, r := range f.Replacements {
		pod, err := c.CoreV1().Pods(r.Of.Namespace).Create(ctx, ReplacementOf(r.Of), metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create the replacement of %s/%s: %w", r.Of.Namespace, r.Of.Name, err))
			continue
		}
		created[i], uids[i] = time.Now(), pod.UID
	}
	return created, uids, errors.Join(errs...)
}

// ReplacementOf is a new pod for a lost member: same namespace, labels, annotations and spec,
// not bound, named after the lost pod's generateName (else its name) with a random suffix.
func ReplacementOf(p *v1.Pod) *v1.Pod {
	spec := p.Spec.DeepCopy()
	spec.NodeName = ""
	gen := p.GenerateName
	if gen == "" {
		gen = p.Name + "-"
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, GenerateName: gen,
			Labels: maps.Clone(p.Labels), Annotations: maps.Clone(p.Annotations)},
		Spec: *spec,
	}
}
