package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// A gang of N through Permit activates O(N) pods in total: the first Permit of the attempt
// wakes the members not yet reserved, every Permit wakes its own pod, and no Permit wakes a
// sibling already reserved or waiting (kube-scheduler keeps an event for each such in-flight
// pod until the oldest in-flight pod is done).
func TestPermitWakesGangOncePerAttempt(t *testing.T) {
	const n = 8
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range n {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
		pods = append(pods, gangMember(fmt.Sprintf("g-%d", i), "g", 1))
	}
	w := newWorld(t, nil, nodes, pods, podGroup("g", n))
	used, placed := map[string]bool{}, []*v1.Pod{}
	reserved := map[string]bool{}
	for i, p := range pods {
		before := len(w.h.activated)
		_, st := w.scheduleOne(p, used, &placed)
		if want := fwk.Wait; i == n-1 {
			if !st.IsSuccess() {
				t.Fatalf("Permit(%s) = %v, want the gang admitted", p.Name, st)
			}
		} else if st.Code() != want {
			t.Fatalf("Permit(%s) = %v, want Wait", p.Name, st)
		}
		for _, k := range w.h.activated[before:] {
			if reserved[k] {
				t.Errorf("Permit(%s) woke %s, already reserved", p.Name, k)
			}
		}
		reserved["ns/"+p.Name] = true
		w.h.register(p)
	}
	if got := len(w.h.activated); got > 2*n {
		t.Fatalf("%d activations for a gang of %d, want at most %d", got, n, 2*n)
	}
}

// A member parked behind an unplaced sibling (sibling-affinity wait) after the attempt's
// first Permit is woken by that sibling's Permit.
func TestPermitWakesSiblingWaiter(t *testing.T) {
	a, s, wk := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1), gangMember("g-2", "g", 1)
	s.Labels["app"] = "s"
	wk.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}}, TopologyKey: testKey}}}}
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("a2", "a", 1)}
	w := newWorld(t, nil, nodes, []*v1.Pod{a, s, wk}, podGroup("g", 3))
	used, placed := map[string]bool{}, []*v1.Pod{}
	if _, st := w.scheduleOne(a, used, &placed); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	if _, st := w.preFilter(wk); st.Message() != msg.SiblingWait("ns", "g-1") {
		t.Fatalf("PreFilter(g-2) = %v, want the sibling wait", st)
	}
	w.h.activated = nil
	if _, st := w.scheduleOne(s, used, &placed); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-1) = %v, want Wait", st)
	}
	if !slices.Contains(w.h.activated, "ns/g-2") {
		t.Fatalf("Permit(g-1) activated %v, want the waiting g-2", w.h.activated)
	}
}
