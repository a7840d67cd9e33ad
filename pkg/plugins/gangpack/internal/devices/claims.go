package devices

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// TemplateGetter returns a ResourceClaimTemplate by namespace and name. A
// resource/v1 lister fits: func(ns, n string) (...) { return l.ResourceClaimTemplates(ns).Get(n) }.
type TemplateGetter func(namespace, name string) (*resourceapi.ResourceClaimTemplate, error)

// ClaimGetter returns a ResourceClaim by namespace and name. The framework's
// SharedDRAManager().ResourceClaims().Get fits as a method value.
type ClaimGetter func(namespace, name string) (*resourceapi.ResourceClaim, error)

// MemberClaims splits a template pod's spec.resourceClaims into what Room takes.
// An entry naming a ResourceClaimTemplate becomes a per-member claim built from
// the template (each member gets its own, as the resourceclaim controller creates
// one per pod); an entry naming a ResourceClaim is shared by every member that
// references it and is fetched with getClaim. A getter may be nil if the pod has
// no entries of its kind.
func MemberClaims(pod *v1.Pod, getTemplate TemplateGetter, getClaim ClaimGetter) (member, shared []*resourceapi.ResourceClaim, err error) {
	if pod == nil {
		return nil, nil, errors.New("devices.MemberClaims: nil pod")
	}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		switch {
		case pc.ResourceClaimName != nil:
			c, err := sharedClaim(pod, pc, getClaim)
			if err != nil {
				return nil, nil, err
			}
			shared = append(shared, c)
		case pc.ResourceClaimTemplateName != nil:
			if getTemplate == nil {
				return nil, nil, fmt.Errorf("pod %s/%s, resource claim %q: no template getter", pod.Namespace, pod.Name, pc.Name)
			}
			t, err := getTemplate(pod.Namespace, *pc.ResourceClaimTemplateName)
			if err != nil {
				return nil, nil, fmt.Errorf("pod %s/%s, resource claim %q: template %q: %w", pod.Namespace, pod.Name, pc.Name, *pc.ResourceClaimTemplateName, err)
			}
			if t == nil {
				return nil, nil, fmt.Errorf("pod %s/%s, resource claim %q: template %q not found", pod.Namespace, pod.Name, pc.Name, *pc.ResourceClaimTemplateName)
			}
			member = append(member, ClaimFromTemplate(pod, pc.Name, t))
		default:
			return nil, nil, fmt.Errorf("pod %s/%s, resource claim %q: neither resourceClaimName nor resourceClaimTemplateName is set", pod.Namespace, pod.Name, pc.Name)
		}
	}
	return member, shared, nil
}

func sharedClaim(pod *v1.Pod, pc *v1.PodResourceClaim, getClaim ClaimGetter) (*resourceapi.ResourceClaim, error) {
	if getClaim == nil {
		return nil, fmt.Errorf("pod %s/%s, resource claim %q: no claim getter", pod.Namespace, pod.Name, pc.Name)
	}
	c, err := getClaim(pod.Namespace, *pc.ResourceClaimName)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s, resource claim %q: claim %q: %w", pod.Namespace, pod.Name, pc.Name, *pc.ResourceClaimName, err)
	}
	if c == nil {
		return nil, fmt.Errorf("pod %s/%s, resource claim %q: claim %q not found", pod.Namespace, pod.Name, pc.Name, *pc.ResourceClaimName)
	}
	if c.DeletionTimestamp != nil {
		return nil, fmt.Errorf("pod %s/%s: resource claim %s/%s is being deleted", pod.Namespace, pod.Name, c.Namespace, c.Name)
	}
	return c, nil
}

// ClaimFromTemplate returns the unallocated claim a member built from pod would
// get for its spec.resourceClaims entry podClaimName: the template's spec
// (t.Spec.Spec), copied, in the pod's namespace, owned by the pod. Its name is
// deterministic (pod-entry) where the resourceclaim controller's is generated;
// the allocator reads only the spec.
func ClaimFromTemplate(pod *v1.Pod, podClaimName string, t *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pod.Name + "-" + podClaimName,
			Namespace:   pod.Namespace,
			Labels:      copyMap(t.Spec.Labels),
			Annotations: copyMap(t.Spec.Annotations),
		},
		Spec: *t.Spec.Spec.DeepCopy(),
	}
	if pod.UID != "" {
		c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pod, v1.SchemeGroupVersion.WithKind("Pod"))}
	}
	return c
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// PodClaims returns the ResourceClaims an existing pod uses, as the API has them (generated
// ones named in its status): those that do not exist (yet) are left out.
func PodClaims(pod *v1.Pod, getClaim ClaimGetter) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			continue
		}
		if c, err := getClaim(pod.Namespace, *name); err == nil && c != nil {
			out = append(out, c)
		}
	}
	return out
}
