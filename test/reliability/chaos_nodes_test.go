package reliability

import (
	"context"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chaos operations on nodes: only free nodes (and, for relabels and re-creation, only
// nodes of unused domains) outside the gangs being repaired.

// unprotect releases the nodes of gangs that are whole again or gone.
func (c *chaos) unprotect() {
	for n, name := range c.protected {
		g := c.gangs[name]
		if g == nil {
			delete(c.protected, n)
			continue
		}
		if _, all := c.boundNodes(g); all {
			delete(c.protected, n)
		}
	}
}

// freeNode returns a random node without bound or Terminating pods, outside the gangs being
// repaired. With spare, the node's whole domain must be unused too (no pod of the namespace
// bound, Terminating or nominated there): relabelling or re-creating a node under a gang that
// is binding races the bind itself, which no scheduler can win (the API server accepts the
// relabel while the bind is in flight).
func (c *chaos) freeNode(spare bool) *v1.Node {
	nodes, err := c.w.cp.Client.CoreV1().Nodes().List(c.w.ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		return nil
	}
	pods, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	c.unprotect()
	domainOf := map[string]string{}
	for _, n := range nodes.Items {
		domainOf[n.Name] = n.Labels[domainKey]
	}
	used, usedDomains := map[string]bool{}, map[string]bool{}
	for _, p := range pods.Items {
		for _, n := range []string{p.Spec.NodeName, p.Status.NominatedNodeName} {
			if n != "" {
				used[n] = true
				usedDomains[domainOf[n]] = true
			}
		}
	}
	for n := range c.protected {
		used[n] = true
	}
	var free []v1.Node
	for _, n := range nodes.Items {
		if !used[n.Name] && !(spare && usedDomains[n.Labels[domainKey]]) {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		return nil
	}
	n := free[c.rng.Intn(len(free))]
	return &n
}

func (c *chaos) cordonFreeNode() {
	if n := c.freeNode(false); n != nil {
		n.Spec.Unschedulable = true
		if _, err := c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{}); err == nil {
			c.count("cordon")
		}
	}
}

func (c *chaos) uncordonAll() {
	nodes, err := c.w.cp.Client.CoreV1().Nodes().List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; n.Spec.Unschedulable {
			n.Spec.Unschedulable = false
			_, _ = c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{})
		}
	}
	c.count("uncordon_all")
}

// relabelFreeNode moves a free node to another domain (and that domain's zone).
func (c *chaos) relabelFreeNode() {
	if n := c.freeNode(true); n != nil {
		old := n.Labels[domainKey]
		maps.Copy(n.Labels, chaosNodeLabels(c.rng.Intn(chaosDomains)))
		if _, err := c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{}); err == nil {
			c.count("relabel")
			c.relabelled[n.Name] = time.Now()
			c.w.t.Logf("%s relabel %s: %s -> %s", time.Now().Format("15:04:05.000"), n.Name, old, n.Labels[domainKey])
		}
	}
}

// recreateFreeNode deletes a free node and creates it again with the same labels.
func (c *chaos) recreateFreeNode() {
	n := c.freeNode(true)
	if n == nil {
		return
	}
	if err := c.w.cp.Client.CoreV1().Nodes().Delete(c.w.ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		return
	}
	_ = wait.PollUntilContextTimeout(c.w.ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := devenv.CreateNode(ctx, c.w.cp.Client, devenv.NodeSpec{Name: n.Name, GPUs: 1, Labels: n.Labels})
		return err == nil, nil
	})
	c.count("recreate_node")
}
