package devenv

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
)

// Violations checks the invariants users trust, over the live pods of namespaces (all when
// empty), and returns one line per violation:
//
//   - every gang's bound members sit in one domain of the gang's topology key (annotation
//     ome.io/topology-key of its PodGroup, else fallbackKey), on nodes that carry the label;
//   - no node is double-booked: the GPUs requested by its bound pods, Terminating ones
//     included (they hold their GPUs until the kubelet finishes them), fit its allocatable;
//   - no gang stays partially bound past its timeout: a gang with 0 < bound < minMember is
//     a violation once its oldest bound member was bound (created, as an upper bound) more
//     than partialGrace ago.
func Violations(ctx context.Context, c kubernetes.Interface, pgs pgclientset.Interface, fallbackKey string, partialGrace time.Duration, namespaces ...string) ([]string, error) {
	nodeByName, pods, err := listNodesAndPods(ctx, c, namespaces)
	if err != nil {
		return nil, err
	}
	out := doubleBooked(nodeByName, pods)
	gangs := boundGangs(pods)
	for _, k := range slices.Sorted(maps.Keys(gangs)) {
		g := gangs[k]
		key, minMember := fallbackKey, int32(0)
		if pg, err := pgs.SchedulingV1alpha1().PodGroups(g.ns).Get(ctx, g.name, metav1.GetOptions{}); err == nil {
			if v := pg.Annotations[TopologyAnno]; v != "" {
				key = v
			}
			minMember = pg.Spec.MinMember
		}
		out = append(out, splitGang(k, key, g.bound, nodeByName)...)
		if v, ok := partialGang(k, g.bound, minMember, partialGrace); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// listNodesAndPods lists the nodes, by name, and the pods of namespaces (all when empty).
func listNodesAndPods(ctx context.Context, c kubernetes.Interface, namespaces []string) (map[string]*v1.Node, []v1.Pod, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	nodeByName := map[string]*v1.Node{}
	for i := range nodes.Items {
		nodeByName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var pods []v1.Pod
	for _, ns := range namespaces {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		pods = append(pods, list.Items...)
	}
	return nodeByName, pods, nil
}

// holdsNode reports whether a pod occupies its node: bound and not finished.
func holdsNode(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// doubleBooked returns a violation for each node whose pods, Terminating ones included,
// request more GPUs than it has allocatable.
func doubleBooked(nodeByName map[string]*v1.Node, pods []v1.Pod) []string {
	gpuUsed := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if !holdsNode(p) {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.Requests[GPU]; ok {
				gpuUsed[p.Spec.NodeName] += q.Value()
			}
		}
	}
	var out []string
	for _, node := range slices.Sorted(maps.Keys(gpuUsed)) {
		n := nodeByName[node]
		if n == nil {
			continue
		}
		alloc := n.Status.Allocatable[GPU]
		if used := gpuUsed[node]; used > alloc.Value() {
			out = append(out, fmt.Sprintf("node %s double-booked: %d GPUs requested, %d allocatable", node, used, alloc.Value()))
		}
	}
	return out
}

// boundGang is a gang's bound members; Terminating pods are no longer members.
type boundGang struct {
	ns, name string
	bound    []v1.Pod
}

// boundGangs groups the bound members of gangs by namespace/PodGroup name.
func boundGangs(pods []v1.Pod) map[string]*boundGang {
	gangs := map[string]*boundGang{}
	for i := range pods {
		p := &pods[i]
		if !holdsNode(p) || p.DeletionTimestamp != nil {
			continue
		}
		if g := p.Labels[PodGroupLabel]; g != "" {
			k := p.Namespace + "/" + g
			if gangs[k] == nil {
				gangs[k] = &boundGang{ns: p.Namespace, name: g}
			}
			gangs[k].bound = append(gangs[k].bound, *p)
		}
	}
	return gangs
}

// splitGang returns the violations of a gang whose members are in more than one domain of
// key, or on nodes without key.
func splitGang(gang, key string, bound []v1.Pod, nodeByName map[string]*v1.Node) []string {
	domains := map[string][]string{}
	for _, p := range bound {
		d := ""
		if n := nodeByName[p.Spec.NodeName]; n != nil {
			d = n.Labels[key]
		}
		domains[d] = append(domains[d], p.Name+"@"+p.Spec.NodeName)
	}
	var out []string
	if len(domains) > 1 {
		out = append(out, fmt.Sprintf("gang %s split across domains of %s: %v", gang, key, domains))
	}
	if _, ok := domains[""]; ok && key != "" {
		out = append(out, fmt.Sprintf("gang %s has members on nodes without %s: %v", gang, key, domains[""]))
	}
	return out
}

// partialGang returns the violation of a gang with 0 < bound < minMember whose oldest bound
// member was created more than partialGrace ago (no check when partialGrace is 0).
func partialGang(gang string, bound []v1.Pod, minMember int32, partialGrace time.Duration) (string, bool) {
	if minMember <= 0 || int32(len(bound)) >= minMember || partialGrace <= 0 {
		return "", false
	}
	oldest := bound[0].CreationTimestamp.Time
	for _, p := range bound {
		if p.CreationTimestamp.Time.Before(oldest) {
			oldest = p.CreationTimestamp.Time
		}
	}
	if time.Since(oldest) <= partialGrace {
		return "", false
	}
	var names []string
	for _, p := range bound {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("gang %s partially bound (%d of %d) for more than %s: %s", gang, len(bound), minMember, partialGrace, strings.Join(names, ",")), true
}
