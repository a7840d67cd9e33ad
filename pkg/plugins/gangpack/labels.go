package gangpack

import (
	"context"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// The placement labels a gang member gets at bind besides the configured node labels
// (docs/reference.md, "Placement labels"): the same values as the annotations of the same name.
const (
	DomainLabel      = gang.DomainAnnotation
	GroupDomainLabel = gang.GroupDomainAnnotation
)

// placementLabels returns the labels of pod's Binding to nodeName: the values of the configured
// node label keys (Args.PlacementLabelKeys) that the node has and, for a gang member, the
// domain values of annotations (ome.io/domain, ome.io/placement-group-domain) that are valid
// label values. A key the pod already carries is skipped and counted: a Binding's label
// overwrites the pod's. nil when there is nothing to write.
func (pl *GangPack) placementLabels(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string, annotations map[string]string) map[string]string {
	logger := klog.FromContext(ctx)
	topologyKey := pl.args.TopologyKey
	if pin := plan.ReadPin(cs); pin != nil && pin.Gang.TopologyKey != "" {
		topologyKey = pin.Gang.TopologyKey
	}
	out := map[string]string{}
	put := func(key, value string) {
		if value == "" {
			return
		}
		if _, has := pod.Labels[key]; has {
			metrics.PlacementLabelsSkipped.WithLabelValues(key).Inc()
			logger.V(4).Info("gangpack.Bind.label_kept", "pod", klog.KObj(pod), "key", key)
			return
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			logger.V(4).Info("gangpack.Bind.label_invalid", "pod", klog.KObj(pod), "key", key, "value", value, "reason", msgs[0])
			return
		}
		out[key] = value
	}
	node := pl.nodeLabels(nodeName)
	for _, key := range pl.args.PlacementLabelKeys(topologyKey) {
		put(key, node[key])
	}
	put(DomainLabel, annotations[gang.DomainAnnotation])
	put(GroupDomainLabel, annotations[gang.GroupDomainAnnotation])
	if len(out) == 0 {
		return nil
	}
	return out
}

// maxLabelChecks bounds the bindings whose labels wait to be checked on the pod informer.
const maxLabelChecks = 64

// labelCheck finds out once whether the API server copies a Binding's labels onto the pod
// (kube-apiserver's PodTopologyLabelsAdmission feature gate, on by default from 1.35; an API
// server without it drops them): the first update of a pod bound with labels that carries
// spec.nodeName tells. The answer sets ome_scheduler_placement_labels_applied.
type labelCheck struct {
	// decided lets every pod event after the answer pass without the lock.
	decided atomic.Bool
	mu      sync.Mutex
	done    bool
	pending map[types.UID]map[string]string
}

// expect records the labels sent on pod uid's Binding, until the check is done.
func (c *labelCheck) expect(uid types.UID, labels map[string]string) {
	if len(labels) == 0 || c.decided.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || len(c.pending) >= maxLabelChecks {
		return
	}
	if c.pending == nil {
		c.pending = map[types.UID]map[string]string{}
	}
	c.pending[uid] = labels
}

// forget drops pod uid's record (its binding failed).
func (c *labelCheck) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, uid)
}

// observe takes one pod informer event. When cur is the first update of a recorded pod that
// carries spec.nodeName, it returns whether the labels sent are on the pod and true; the
// check is then done.
func (c *labelCheck) observe(old, cur *v1.Pod) (applied, decided bool) {
	if c.decided.Load() || cur == nil || cur.Spec.NodeName == "" || (old != nil && old.Spec.NodeName != "") {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sent, ok := c.pending[cur.UID]
	if c.done || !ok {
		return false, false
	}
	c.done, c.pending = true, nil
	c.decided.Store(true)
	for k, v := range sent {
		if cur.Labels[k] != v {
			return false, true
		}
	}
	return true, true
}

// checkLabels feeds a pod informer event to the check and reports its answer once.
func (pl *GangPack) checkLabels(old, cur *v1.Pod) {
	applied, decided := pl.labels.observe(old, cur)
	if !decided {
		return
	}
	if applied {
		metrics.PlacementLabelsApplied.Set(1)
		pl.logger.V(2).Info("gangpack.Bind.labels_applied", "pod", klog.KObj(cur))
		return
	}
	metrics.PlacementLabelsApplied.Set(0)
	pl.logger.Info("Warning: the API server did not copy the Binding's placement labels onto the pod; "+
		"enable the PodTopologyLabelsAdmission feature gate on kube-apiserver (beta and on by default from Kubernetes 1.35). "+
		"Pods keep binding, with the placement annotations only", "pod", klog.KObj(cur), "node", cur.Spec.NodeName)
}
