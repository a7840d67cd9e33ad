package explain

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// WhatIfName names the hypothetical gang's PodGroup and members.
const WhatIfName = "kubectl-ome-whatif"

// Shape is a hypothetical gang, as kubectl ome whatif and domains take it from flags.
type Shape struct {
	Namespace string
	MinMember int
	Requests  v1.ResourceList
	// TopologyKey overrides the scheduler's default key ("" = the default).
	TopologyKey string
	// AntiAffinityPerNode gives the members a required pod anti-affinity among themselves on
	// kubernetes.io/hostname: one member per node.
	AntiAffinityPerNode bool
	Priority            *int32
	// ClaimTemplate, when set, gives every member a claim from it (DRA devices; its
	// namespace is the gang's).
	ClaimTemplate *resourceapi.ResourceClaimTemplate
}

// WhatIf explains a gang of the shape that does not exist: nothing is created.
func WhatIf(c *Cluster, s Shape) (*Result, error) {
	cc, pg, pods, err := c.hypothetical(s)
	if err != nil {
		return nil, err
	}
	return Explain(cc, Request{PodGroup: pg, Extra: pods})
}

// hypothetical builds the shape's PodGroup and members, and the cluster view to plan them
// in (the arguments with the topology key overridden when the PodGroup cannot name it).
func (c *Cluster) hypothetical(s Shape) (*Cluster, *schedv1alpha1.PodGroup, []*v1.Pod, error) {
	if s.MinMember < 1 {
		return nil, nil, nil, fmt.Errorf("--min-member must be at least 1, got %d", s.MinMember)
	}
	ns := s.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	cc := *c
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: WhatIfName, UID: "whatif"},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: int32(s.MinMember)}}
	if s.TopologyKey != "" {
		if a := c.Args.PodGroupTopologyKeyAnnotation; a != "" {
			pg.Annotations = map[string]string{a: s.TopologyKey}
		} else {
			args := *c.Args
			args.TopologyKey = s.TopologyKey
			cc.Args = &args
		}
	}
	if s.ClaimTemplate != nil {
		t := s.ClaimTemplate.DeepCopy()
		t.Namespace = ns
		dra := DRA{}
		if c.DRA != nil {
			dra = *c.DRA
		}
		dra.Templates = append(slices.Clone(dra.Templates), t)
		cc.DRA = &dra
	}
	labels := map[string]string{gang.Label: WhatIfName, "app.kubernetes.io/name": WhatIfName}
	pods := make([]*v1.Pod, s.MinMember)
	for i := range pods {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", WhatIfName, i),
			UID: types.UID(fmt.Sprintf("whatif-%d", i)), Labels: labels},
			Spec: v1.PodSpec{SchedulerName: "ome-scheduler", Priority: s.Priority,
				Containers: []v1.Container{{Name: "member", Resources: v1.ResourceRequirements{Requests: s.Requests}}}}}
		if t := s.ClaimTemplate; t != nil {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "whatif", ResourceClaimTemplateName: &t.Name}}
			p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "whatif"}}
		}
		if s.AntiAffinityPerNode {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": WhatIfName}},
					TopologyKey:   v1.LabelHostname}}}}
		}
		pods[i] = p
	}
	return &cc, pg, pods, nil
}
