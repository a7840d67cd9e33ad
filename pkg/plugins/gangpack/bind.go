package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// The placement annotations every gang member gets at bind (docs/reference.md, "Placement
// annotations"): an interface for routers that pair pods by domain.
const (
	DomainAnnotation         = gang.DomainAnnotation
	DomainKeyAnnotation      = gang.DomainKeyAnnotation
	GroupDomainAnnotation    = gang.GroupDomainAnnotation
	GroupDomainKeyAnnotation = gang.GroupDomainKeyAnnotation
)

// Bind binds a gang member itself, with the placement annotations on the Binding, and returns
// Skip for every other pod, so that DefaultBinder (after OMEGangPack in the profile's bind
// list) binds those. The API server copies a Binding's annotations onto the pod in the same
// update that sets spec.nodeName (BindingREST.setPodNodeAndMetadata in
// k8s.io/kubernetes/pkg/registry/core/pod/storage), so the annotations cost no extra request
// and are there from the moment the pod is bound. The call and its error handling are
// DefaultBinder's (k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder), so a
// failed binding goes through the framework exactly as it would there.
func (pl *GangPack) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	pl.paceBinding(pod)
	annotations := pl.placementAnnotations(cs, pod, nodeName)
	if annotations == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: annotations},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if c := pl.handle.APICacher(); c != nil {
		onFinish, err := c.BindPod(binding)
		if err != nil {
			return fwk.AsStatus(err)
		}
		if err := c.WaitOnFinish(ctx, onFinish); err != nil {
			return fwk.AsStatus(err)
		}
		return nil
	}
	klog.FromContext(ctx).V(3).Info("Attempting to bind pod to node", "pod", klog.KObj(pod), "node", klog.KRef("", nodeName),
		"domain", annotations[gang.DomainAnnotation], "groupDomain", annotations[gang.GroupDomainAnnotation])
	if err := pl.handle.ClientSet().CoreV1().Pods(binding.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}

// placementAnnotations returns the annotations of a gang member bound to nodeName: the
// domain's key and value and, for a partner of a placement group, the group domain's. nil
// for a pod without the cycle's pin (a standalone pod). The values are the node's labels as
// the node informer has them: the snapshot is not read here, since binding runs beside the
// next scheduling cycle, which updates the snapshot in place. A node the informer no longer
// has (deleted meanwhile) or without the label gives the domain the pin recorded.
func (pl *GangPack) placementAnnotations(cs fwk.CycleState, pod *v1.Pod, nodeName string) map[string]string {
	if _, _, member := gang.Of(pod); !member {
		return nil
	}
	pin := plan.ReadPin(cs)
	if pin == nil || pin.Gang.TopologyKey == "" {
		return nil
	}
	labels := pl.nodeLabels(nodeName)
	out := map[string]string{}
	put := func(keyAnn, valueAnn, key, recorded string) {
		value := labels[key]
		if value == "" {
			value = recorded
		}
		if value != "" {
			out[keyAnn], out[valueAnn] = key, value
		}
	}
	put(gang.DomainKeyAnnotation, gang.DomainAnnotation, pin.Gang.TopologyKey, pin.Domain)
	if g := pin.Gang.Group; g != nil && g.TopologyKey != "" {
		recorded := ""
		if pin.Within.Key == g.TopologyKey {
			recorded = pin.Within.Value
		} else if g.TopologyKey == pin.Gang.TopologyKey {
			recorded = pin.Domain
		}
		put(gang.GroupDomainKeyAnnotation, gang.GroupDomainAnnotation, g.TopologyKey, recorded)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// nodeLabels returns the node's labels from the node informer (nil when unknown).
func (pl *GangPack) nodeLabels(nodeName string) map[string]string {
	if pl.nodes == nil {
		return nil
	}
	n, err := pl.nodes.Get(nodeName)
	if err != nil || n == nil {
		return nil
	}
	return n.Labels
}
