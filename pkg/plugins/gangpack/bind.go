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

// Bind binds every pod of the profile itself (DefaultBinder, listed after OMEGangPack in the
// chart's bind list, is no longer reached), with the placement labels
// (labels.go) on the Binding and, for a gang member, the placement annotations. The API server
// copies a Binding's annotations, and its labels when PodTopologyLabelsAdmission is on
// (beta, on by default from Kubernetes 1.35), onto the pod in the same update that sets
// spec.nodeName (BindingREST.setPodNodeAndMetadata in
// k8s.io/kubernetes/pkg/registry/core/pod/storage), so they cost no extra request and are there
// from the moment the pod is bound. The Binding, the call and its error handling are
// DefaultBinder's (k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder), so a
// failed binding goes through the framework exactly as it would there.
func (pl *GangPack) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	pl.paceBinding(pod)
	annotations := pl.placementAnnotations(cs, pod, nodeName)
	labels := pl.placementLabels(ctx, cs, pod, nodeName, annotations)
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: annotations, Labels: labels},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	pl.labels.expect(pod.UID, labels)
	if err := pl.bind(ctx, binding); err != nil {
		pl.labels.forget(pod.UID)
		return fwk.AsStatus(err)
	}
	return nil
}

// bind sends the Binding as DefaultBinder does: through the API cacher when the scheduler has
// one, else with the client.
func (pl *GangPack) bind(ctx context.Context, binding *v1.Binding) error {
	if c := pl.handle.APICacher(); c != nil {
		onFinish, err := c.BindPod(binding)
		if err != nil {
			return err
		}
		return c.WaitOnFinish(ctx, onFinish)
	}
	klog.FromContext(ctx).V(3).Info("Attempting to bind pod to node", "pod", klog.KObj(&binding.ObjectMeta), "node", klog.KRef("", binding.Target.Name),
		"domain", binding.Annotations[gang.DomainAnnotation], "groupDomain", binding.Annotations[gang.GroupDomainAnnotation], "labels", binding.Labels)
	return pl.handle.ClientSet().CoreV1().Pods(binding.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
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
