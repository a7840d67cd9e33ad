package integration

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/metrics/legacyregistry"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// domainKey is the topology label that defines the domains of the integration fixtures.
const domainKey = "topology.ome.io/domain"

// domain creates n Ready nodes labelled domainKey=value with gpus units each and returns
// their names (prefixed <value>-<i>).
func (e *env) domain(value string, n int, gpus int64, extra ...map[string]string) []string {
	e.t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		labels := map[string]string{domainKey: value}
		for _, m := range extra {
			for k, v := range m {
				labels[k] = v
			}
		}
		out = append(out, e.node(devenv.NodeSpec{Name: fmt.Sprintf("%s-%d", value, i), GPUs: gpus, Labels: labels}))
	}
	return out
}

// podGroup creates a PodGroup annotated with key (empty = no annotation).
func (e *env) podGroup(name string, minMember int32, key string, timeout int32) *schedv1alpha1.PodGroup {
	e.t.Helper()
	pg, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, devenv.NewPodGroup(e.ns, name, minMember, key, timeout), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create PodGroup %s: %v", name, err)
	}
	return pg
}

// gang creates n members <group>-<i> requesting gpus each; apart adds required
// anti-affinity among them.
func (e *env) gang(group string, n int, gpus int64, apart bool) []string {
	e.t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		e.pod(devenv.PodSpec{Name: name, Group: group, GPUs: gpus, Apart: apart})
		names = append(names, name)
	}
	return names
}

// labelOf returns a node's label value.
func (e *env) labelOf(node, key string) string {
	e.t.Helper()
	n, err := e.cp.Client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get node %s: %v", node, err)
	}
	return n.Labels[key]
}

// oneDomain asserts that all pods sit in one domain of key and returns it.
func (e *env) oneDomain(placed map[string]string, key string) string {
	e.t.Helper()
	domains := map[string][]string{}
	for pod, node := range placed {
		d := e.labelOf(node, key)
		domains[d] = append(domains[d], pod)
	}
	if len(domains) != 1 {
		e.t.Fatalf("gang split across domains of %s: %v", key, domains)
	}
	for d := range domains {
		if d == "" {
			e.t.Fatalf("gang placed on nodes without label %s: %v", key, placed)
		}
		return d
	}
	return ""
}

// distinctNodes asserts every pod is on its own node.
func (e *env) distinctNodes(placed map[string]string) {
	e.t.Helper()
	seen := map[string]string{}
	for pod, node := range placed {
		if other, ok := seen[node]; ok {
			e.t.Fatalf("pods %s and %s share node %s", pod, other, node)
		}
		seen[node] = pod
	}
}

// staysPending asserts that none of the pods gets a node for d.
func (e *env) staysPending(d time.Duration, pods ...string) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, p := range pods {
			if n := devenv.NodeOf(e.ctx, e.cp.Client, e.ns, p); n != "" {
				e.t.Fatalf("pod %s bound to %s, want it Pending", p, n)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// occupy binds a GPU-requesting pod for another scheduler directly onto a node.
func (e *env) occupy(name, node string, gpus int64) {
	e.t.Helper()
	e.pod(devenv.PodSpec{Name: name, GPUs: gpus, SchedulerName: "other-scheduler"})
	if err := devenv.BindPod(e.ctx, e.cp.Client, e.ns, name, node); err != nil {
		e.t.Fatalf("bind %s to %s: %v", name, node, err)
	}
}

// bindMember binds a gang member directly (as if placed by an earlier scheduler process).
func (e *env) bindMember(name, group, node string, gpus int64) {
	e.t.Helper()
	e.pod(devenv.PodSpec{Name: name, Group: group, GPUs: gpus})
	if err := devenv.BindPod(e.ctx, e.cp.Client, e.ns, name, node); err != nil {
		e.t.Fatalf("bind %s to %s: %v", name, node, err)
	}
}

// deletePod deletes a pod gracefully, as a real cluster does: a bound pod stays Terminating,
// on its node, until the fake kubelet finishes the deletion (devenv.DefaultMaxGrace).
func (e *env) deletePod(name string) {
	e.t.Helper()
	if err := e.cp.Client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// deletePodNow deletes a pod with grace period 0 (gone at once, as kubectl delete --now
// --force would).
func (e *env) deletePodNow(name string) {
	e.t.Helper()
	zero := int64(0)
	if err := e.cp.Client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// gone waits until the pods' graceful deletions have finished.
func (e *env) gone(timeout time.Duration, pods ...string) {
	e.t.Helper()
	for _, p := range pods {
		if err := devenv.WaitGone(e.ctx, e.cp.Client, e.ns, p, timeout); err != nil {
			e.t.Fatalf("pod %s still exists: %v", p, err)
		}
	}
}

func (e *env) updatePod(name string, mutate func(*v1.Pod)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(p)
		_, err = e.cp.Client.CoreV1().Pods(e.ns).Update(e.ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("update pod %s: %v", name, err)
	}
}

func (e *env) updatePodGroup(name string, mutate func(*schedv1alpha1.PodGroup)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(pg)
		_, err = e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Update(e.ctx, pg, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("update PodGroup %s: %v", name, err)
	}
}

func (e *env) updateNode(name string, mutate func(*v1.Node)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.cp.Client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		_, err = e.cp.Client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("update node %s: %v", name, err)
	}
}

// ungate removes every scheduling gate of a pod.
func (e *env) ungate(name string) {
	e.updatePod(name, func(p *v1.Pod) { p.Spec.SchedulingGates = nil })
}

// metric returns the current value of an ome_scheduler_* series from the process registry
// (the in-process scheduler registers into the component-base legacy registry); for a
// histogram, its sample count.
func metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := lookupMetric(t, name, labels)
	if !ok {
		t.Fatalf("metric %s%v not found", name, labels)
	}
	return v
}

// lookupMetric is metric without failing: ok is false when no series matches.
func lookupMetric(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func labelSelector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func (e *env) updateNodeLabel(node, key, value string) {
	e.updateNode(node, func(n *v1.Node) { n.Labels[key] = value })
}
