package devenv

import (
	"context"
	"fmt"
	"sort"
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
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodeByName := map[string]*v1.Node{}
	for i := range nodes.Items {
		nodeByName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var pods []v1.Pod
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		pods = append(pods, list.Items...)
	}
	var out []string
	gpuUsed := map[string]int64{}
	type gang struct {
		ns, name string
		bound    []v1.Pod
	}
	gangs := map[string]*gang{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.Requests[GPU]; ok {
				gpuUsed[p.Spec.NodeName] += q.Value()
			}
		}
		if p.DeletionTimestamp != nil {
			continue // Terminating: occupies its node, is no longer a member
		}
		if g := p.Labels[PodGroupLabel]; g != "" {
			k := p.Namespace + "/" + g
			if gangs[k] == nil {
				gangs[k] = &gang{ns: p.Namespace, name: g}
			}
			gangs[k].bound = append(gangs[k].bound, p)
		}
	}
	for node, used := range gpuUsed {
		n := nodeByName[node]
		if n == nil {
			continue
		}
		alloc := n.Status.Allocatable[GPU]
		if used > alloc.Value() {
			out = append(out, fmt.Sprintf("node %s double-booked: %d GPUs requested, %d allocatable", node, used, alloc.Value()))
		}
	}
	keys := make([]string, 0, len(gangs))
	for k := range gangs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := gangs[k]
		key, minMember := fallbackKey, int32(0)
		if pg, err := pgs.SchedulingV1alpha1().PodGroups(g.ns).Get(ctx, g.name, metav1.GetOptions{}); err == nil {
			if v := pg.Annotations[TopologyAnno]; v != "" {
				key = v
			}
			minMember = pg.Spec.MinMember
		}
		domains := map[string][]string{}
		for _, p := range g.bound {
			d := ""
			if n := nodeByName[p.Spec.NodeName]; n != nil {
				d = n.Labels[key]
			}
			domains[d] = append(domains[d], p.Name+"@"+p.Spec.NodeName)
		}
		if len(domains) > 1 {
			out = append(out, fmt.Sprintf("gang %s split across domains of %s: %v", k, key, domains))
		}
		if _, ok := domains[""]; ok && key != "" {
			out = append(out, fmt.Sprintf("gang %s has members on nodes without %s: %v", k, key, domains[""]))
		}
		if minMember > 0 && int32(len(g.bound)) < minMember && partialGrace > 0 {
			oldest := g.bound[0].CreationTimestamp.Time
			for _, p := range g.bound {
				if p.CreationTimestamp.Time.Before(oldest) {
					oldest = p.CreationTimestamp.Time
				}
			}
			if time.Since(oldest) > partialGrace {
				var names []string
				for _, p := range g.bound {
					names = append(names, p.Name)
				}
				out = append(out, fmt.Sprintf("gang %s partially bound (%d of %d) for more than %s: %s", k, len(g.bound), minMember, partialGrace, strings.Join(names, ",")))
			}
		}
	}
	return out, nil
}
