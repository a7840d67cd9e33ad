// Package limitplan computes the placement of the side-by-side benchmark's "limit" binder
// (test/sidebyside/limitbinder): no filtering or scoring, only nvidia.com/gpu counts, so that
// the binder can bind the whole backlog as fast as the API server and the client's rate limit
// allow. Developer tooling only; nothing under pkg/ or cmd/ imports it.
package limitplan

import (
	"fmt"
	"sort"
)

// Node is a node's name, its clique (the value of its topology label) and its allocatable
// nvidia.com/gpu.
type Node struct {
	Name, Clique string
	GPUs         int64
}

// Pod is a pending pod's name, its gang (empty: a gang of its own) and its nvidia.com/gpu
// request.
type Pod struct {
	Name, Gang string
	GPUs       int64
}

// clique is a clique's nodes in name order and the GPUs still free on each.
type clique struct {
	name  string
	nodes []string
	free  []int64
	total int64 // free GPUs over the clique's nodes
}

// Place assigns a node to every pod before anything is bound: pods sorted by name, gang by
// gang in the order of their first pod; a gang goes into the first clique (in name order)
// with room for all of its GPUs, and its pods fill that clique's nodes in name order. A gang
// that fits no single clique is spread over whatever room is left (a split). No node gets
// more nvidia.com/gpu than its allocatable. It returns pod → node and the pods that found no
// room.
func Place(nodes []Node, pods []Pod) (map[string]string, []string) {
	cliques := groupCliques(nodes)
	gangs := groupGangs(pods)
	out := make(map[string]string, len(pods))
	var unplaced []string
	for _, g := range gangs {
		var need int64
		for _, p := range g {
			need += p.GPUs
		}
		order := cliques
		for i, c := range cliques {
			if c.total >= need {
				// The fitting clique first, the rest after it for a gang that still spills.
				order = append([]*clique{c}, append(append([]*clique{}, cliques[:i]...), cliques[i+1:]...)...)
				break
			}
		}
		for _, p := range g {
			if node, ok := take(order, p.GPUs); ok {
				out[p.Name] = node
			} else {
				unplaced = append(unplaced, p.Name)
			}
		}
	}
	return out, unplaced
}

// take reserves gpus on the first node (cliques in the given order) with that much free.
func take(order []*clique, gpus int64) (string, bool) {
	for _, c := range order {
		if c.total < gpus {
			continue
		}
		for i := range c.nodes {
			if c.free[i] >= gpus {
				c.free[i] -= gpus
				c.total -= gpus
				return c.nodes[i], true
			}
		}
	}
	return "", false
}

func groupCliques(nodes []Node) []*clique {
	sorted := append([]Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	by := map[string]*clique{}
	var out []*clique
	for _, n := range sorted {
		c := by[n.Clique]
		if c == nil {
			c = &clique{name: n.Clique}
			by[n.Clique] = c
			out = append(out, c)
		}
		c.nodes = append(c.nodes, n.Name)
		c.free = append(c.free, max(n.GPUs, 0))
		c.total += max(n.GPUs, 0)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// groupGangs returns the pods sorted by name, grouped by gang in the order of each gang's
// first pod.
func groupGangs(pods []Pod) [][]Pod {
	sorted := append([]Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	idx := map[string]int{}
	var out [][]Pod
	for _, p := range sorted {
		key := p.Gang
		if key == "" {
			key = "pod/" + p.Name
		}
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// Check verifies a placement: every pod placed on a known node and no node over its GPUs.
func Check(nodes []Node, pods []Pod, placed map[string]string) error {
	free := map[string]int64{}
	for _, n := range nodes {
		free[n.Name] = n.GPUs
	}
	for _, p := range pods {
		node, ok := placed[p.Name]
		if !ok {
			return fmt.Errorf("pod %s has no node", p.Name)
		}
		if _, ok := free[node]; !ok {
			return fmt.Errorf("pod %s placed on unknown node %s", p.Name, node)
		}
		free[node] -= p.GPUs
		if free[node] < 0 {
			return fmt.Errorf("node %s is over its allocatable nvidia.com/gpu", node)
		}
	}
	return nil
}
