package explain

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// nominatedCluster is one clique x of one free 4-GPU node, and a pending standalone pod of
// priority prio nominated to it (a preemptor waiting for its victims).
func nominatedCluster(prio int32) *Cluster {
	c := &Cluster{Args: testArgs(), Nodes: []*v1.Node{node("x-1", "x", 4)}}
	nom := pod("t", "preemptor", "", "", 4)
	nom.Spec.Priority = ptr.To(prio)
	nom.Status.NominatedNodeName = "x-1"
	c.Pods = append(c.Pods, nom)
	return c
}

// kube-scheduler's Filter counts the pods nominated to a node with a priority at least the
// pod's (framework.addGENominatedPods): explain and whatif count them too. The domain looks
// free, but an equal-priority preemptor is nominated to its only node.
func TestNominatedPodsTakeRoom(t *testing.T) {
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "g", UID: "pg"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}}
	g := []*v1.Pod{pod("t", "g-0", "", "g", 1), pod("t", "g-1", "", "g", 1)}
	c := nominatedCluster(0)
	c.Pods = append(c.Pods, g...)
	r, err := Explain(c, Request{PodGroup: pg})
	if err != nil {
		t.Fatal(err)
	}
	if r.ChosenDomain != "" || !strings.Contains(r.Reason, "no domain has room") {
		t.Errorf("explain with x-1 nominated to an equal-priority pod: chosen %q, %q; want no room", r.ChosenDomain, r.Reason)
	}
	w, err := WhatIf(nominatedCluster(0), whatif(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if w.ChosenDomain != "" || !strings.Contains(w.Reason, "no domain has room") {
		t.Errorf("whatif with x-1 nominated to an equal-priority pod: chosen %q, %q; want no room", w.ChosenDomain, w.Reason)
	}

	// A lower-priority nomination does not count (the pod may preempt it), nor do the
	// explained gang's own nominated members (they are its need).
	low := whatif(2, 1)
	low.Priority = ptr.To[int32](10)
	if w, err := WhatIf(nominatedCluster(5), low); err != nil || w.ChosenDomain != "x" {
		t.Errorf("whatif over a lower-priority nomination: %+v, %v; want x", w, err)
	}
	own := &Cluster{Args: testArgs(), Nodes: []*v1.Node{node("x-1", "x", 4)}}
	for _, p := range g {
		p = p.DeepCopy()
		p.Status.NominatedNodeName = "x-1"
		own.Pods = append(own.Pods, p)
	}
	if r, err := Explain(own, Request{PodGroup: pg}); err != nil || r.ChosenDomain != "x" {
		t.Errorf("explain of a gang nominated to x-1 itself: %+v, %v; want x", r, err)
	}

	// A forming gang's member nominated to a node its pin reserves room on is counted once:
	// x-1 (8 GPUs) keeps 4 for u/f's member, and 4 are left for the gang asked about.
	held := &Cluster{Args: testArgs(), Nodes: []*v1.Node{node("x-1", "x", 8)}}
	f := pod("u", "f-0", "", "f", 4)
	f.Status.NominatedNodeName = "x-1"
	held.Pods = append(held.Pods, f)
	held.Reservations = &Reservations{Leader: true, Pins: []Pin{{Gang: "u/f", TopologyKey: clique, Domain: "x", Forming: true,
		Remaining: 1, MinMember: 1, Reserved: []ReservedSlot{{Node: "x-1", Members: 1, Each: map[string]int64{gpu: 4}}}}}}
	if w, err := WhatIf(held, whatif(1, 4)); err != nil || w.ChosenDomain != "x" {
		t.Errorf("whatif next to a reserved, nominated member: %+v, %v; want x (the member counted once)", w, err)
	}
}
