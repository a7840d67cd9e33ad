package devices

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

func template(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "trainer"}},
			Spec:       spec,
		},
	}
}

func templates(ts ...*resourceapi.ResourceClaimTemplate) TemplateGetter {
	return func(namespace, name string) (*resourceapi.ResourceClaimTemplate, error) {
		for _, t := range ts {
			if t.Namespace == namespace && t.Name == name {
				return t, nil
			}
		}
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaimtemplates"), name)
	}
}

func existing(cs ...*resourceapi.ResourceClaim) ClaimGetter {
	return func(namespace, name string) (*resourceapi.ResourceClaim, error) {
		for _, c := range cs {
			if c.Namespace == namespace && c.Name == name {
				return c, nil
			}
		}
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
	}
}

func memberPod(entries ...v1.PodResourceClaim) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: ns, UID: types.UID("uid-worker-0")},
		Spec:       v1.PodSpec{ResourceClaims: entries},
	}
}

func fromTemplate(entry, tmpl string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: entry, ResourceClaimTemplateName: ptr.To(tmpl)}
}

func byName(entry, claimName string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: entry, ResourceClaimName: ptr.To(claimName)}
}

func TestMemberClaims(t *testing.T) {
	gpuTmpl := template("two-gpus", gpus(2).Spec)
	channel := channelClaim()
	pod := memberPod(fromTemplate("gpu", "two-gpus"), byName("ch", "channel"))

	member, shared, err := MemberClaims(pod, templates(gpuTmpl), existing(channel))
	if err != nil {
		t.Fatal(err)
	}
	if len(member) != 1 || len(shared) != 1 || shared[0] != channel {
		t.Fatalf("member %d, shared %d (%v); want 1 built from the template and the existing channel claim", len(member), len(shared), shared)
	}
	m := member[0]
	if m.Name != "worker-0-gpu" || m.Namespace != ns || m.Labels["app"] != "trainer" || m.Status.Allocation != nil {
		t.Errorf("member claim meta = %+v", m.ObjectMeta)
	}
	if !metav1.IsControlledBy(m, pod) {
		t.Errorf("member claim is not controlled by the pod: %v", m.OwnerReferences)
	}
	// The spec is a copy: changing it leaves the template alone.
	m.Spec.Devices.Requests[0].Exactly.Count = 7
	if gpuTmpl.Spec.Spec.Devices.Requests[0].Exactly.Count != 2 {
		t.Error("ClaimFromTemplate shares the template's spec")
	}
	m.Spec.Devices.Requests[0].Exactly.Count = 2

	// End to end: 2 GPUs per member, the channel shared: 2 members on a 4-GPU node.
	in := NewInputs(structured.Features{}, allocatedState(), stdClasses(), nodeSlices("node-a", 4, 1), nil)
	if n, err := Room(context.Background(), in, node("node-a"), member, shared, 8); n != 2 || err != nil {
		t.Fatalf("Room = %d, %v; want 2, nil", n, err)
	}
}

func TestMemberClaimsMissingClassFromTemplate(t *testing.T) {
	tmpl := template("tpu", claim("x", request("tpu", "tpu.example.com", 1)).Spec)
	member, shared, err := MemberClaims(memberPod(fromTemplate("acc", "tpu")), templates(tmpl), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := NewInputs(structured.Features{}, allocatedState(), stdClasses(), nodeSlices("node-a", 4, 1), nil)
	_, err = Room(context.Background(), in, node("node-a"), member, shared, 8)
	var mc *MissingClassError
	if !errors.As(err, &mc) || mc.Class != "tpu.example.com" || mc.Claim != ns+"/worker-0-acc" {
		t.Fatalf("err = %v, want a MissingClassError naming tpu.example.com and claim %s/worker-0-acc", err, ns)
	}
}

func TestMemberClaimsErrors(t *testing.T) {
	deleting := channelClaim()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		tg      TemplateGetter
		cg      ClaimGetter
		wantErr string
	}{
		{"nil pod", nil, nil, nil, "nil pod"},
		{"missing template", memberPod(fromTemplate("gpu", "nope")), templates(), nil, `template "nope"`},
		{"template getter returns nil", memberPod(fromTemplate("gpu", "nope")),
			func(string, string) (*resourceapi.ResourceClaimTemplate, error) { return nil, nil }, nil, "not found"},
		{"no template getter", memberPod(fromTemplate("gpu", "two-gpus")), nil, nil, "no template getter"},
		{"missing claim", memberPod(byName("ch", "nope")), nil, existing(), `claim "nope"`},
		{"no claim getter", memberPod(byName("ch", "channel")), nil, nil, "no claim getter"},
		{"claim being deleted", memberPod(byName("ch", "channel")), nil, existing(deleting), "being deleted"},
		{"entry with neither field", memberPod(v1.PodResourceClaim{Name: "odd"}), nil, nil, "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := MemberClaims(tc.pod, tc.tg, tc.cg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMemberClaimsNoEntries(t *testing.T) {
	member, shared, err := MemberClaims(memberPod(), nil, nil)
	if err != nil || member != nil || shared != nil {
		t.Fatalf("= %v, %v, %v; want nil, nil, nil", member, shared, err)
	}
}
