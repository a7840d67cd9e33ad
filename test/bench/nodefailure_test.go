package bench

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The node-failure planning of workload NodeFailure and of test/reliability's repair
// scenario (internal/devenv/nodefailure.go), tested here because make test's unit step runs
// this package.

func TestDomainCategory(t *testing.T) {
	for _, tc := range []struct {
		room []devenv.NodeRoom
		need []int64
		want string
	}{
		{[]devenv.NodeRoom{{Free: 8}, {Free: 8}}, []int64{8, 8}, devenv.RepairRoom},
		{[]devenv.NodeRoom{{Free: 8}, {Free: 0, Lower: 8}}, []int64{8, 8}, devenv.RepairVictims},
		{[]devenv.NodeRoom{{Free: 4, Lower: 4}}, []int64{8}, devenv.RepairVictims},
		{[]devenv.NodeRoom{{Free: 4}, {Free: 4}}, []int64{8}, devenv.RepairNone},
		{[]devenv.NodeRoom{{Free: 8, Lower: 0}}, []int64{8, 8}, devenv.RepairNone},
		{nil, []int64{1}, devenv.RepairNone},
	} {
		if got := devenv.DomainCategory(tc.room, tc.need); got != tc.want {
			t.Errorf("devenv.DomainCategory(%v, %v) = %s, want %s", tc.room, tc.need, got, tc.want)
		}
	}
}

// failureCluster: two domains of 4 nodes with 8 GPUs; d0 holds gang a (3 whole-node members)
// and one free node, d1 holds gang b and a low-priority whole-node standalone pod.
func failureCluster() ([]*v1.Node, []*v1.Pod) {
	var nodes []*v1.Node
	for i := 0; i < 8; i++ {
		nodes = append(nodes, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{devenv.CliqueKey: fmt.Sprintf("d%d", i/4)}},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{devenv.GPU: resource.MustParse("8")}},
		})
	}
	pod := func(name, gang, node string, prio int32) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{}},
			Spec: v1.PodSpec{NodeName: node, Priority: ptr.To(prio), Containers: []v1.Container{{Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{devenv.GPU: resource.MustParse("8")}}}}}}
		if gang != "" {
			p.Labels[devenv.PodGroupLabel] = gang
		}
		return p
	}
	pods := []*v1.Pod{
		pod("a-0", "a", "n0", 1000), pod("a-1", "a", "n1", 1000), pod("a-2", "a", "n2", 1000),
		pod("b-0", "b", "n4", 1000), pod("b-1", "b", "n5", 1000), pod("b-2", "b", "n6", 1000),
		pod("low", "", "n7", 10),
		pod("pending", "a", "", 1000),
	}
	return nodes, pods
}

func TestPlanNodeFailure(t *testing.T) {
	nodes, pods := failureCluster()
	for seed := uint64(0); seed < 20; seed++ {
		plan := devenv.PlanNodeFailure(nodes, pods, devenv.CliqueKey, 25, seed) // 2 of 8 nodes
		if len(plan.Nodes) != 2 {
			t.Fatalf("seed %d: %d nodes failed, want 2", seed, len(plan.Nodes))
		}
		if again := devenv.PlanNodeFailure(nodes, pods, devenv.CliqueKey, 25, seed); !slices.Equal(again.Nodes, plan.Nodes) {
			t.Fatalf("seed %d: %v then %v: the plan is not reproducible", seed, plan.Nodes, again.Nodes)
		}
		if len(plan.Deleted) != 2 || len(plan.Replacements) != 2 {
			t.Fatalf("seed %d: %d deleted, %d replacements, want 2 and 2", seed, len(plan.Deleted), len(plan.Replacements))
		}
		for _, n := range plan.Nodes {
			if n == "n3" || n == "n7" {
				t.Fatalf("seed %d: node %s without a gang member failed", seed, n)
			}
		}
		for _, r := range plan.Replacements {
			if plan.Survivors[r.Of.UID] {
				t.Fatalf("seed %d: lost member %s counted as a survivor", seed, r.Of.Name)
			}
			want := map[string]string{"ns/a": devenv.RepairRoom, "ns/b": devenv.RepairVictims}[r.Gang]
			sameGang := plan.Replacements[0].Gang == plan.Replacements[1].Gang
			if sameGang && r.Gang == "ns/a" {
				want = devenv.RepairNone // two lost members, one free node
			}
			if sameGang && r.Gang == "ns/b" {
				want = devenv.RepairNone // two lost members, one low-priority node
			}
			if r.Category != want || r.Domain != map[string]string{"ns/a": "d0", "ns/b": "d1"}[r.Gang] {
				t.Fatalf("seed %d: replacement of %s: category %s in %q, want %s", seed, r.Of.Name, r.Category, r.Domain, want)
			}
		}
		if len(plan.Survivors)+len(plan.Deleted) != 3*len(plan.GangsHit) {
			t.Fatalf("seed %d: %d survivors, %d deleted for %d gangs hit", seed, len(plan.Survivors), len(plan.Deleted), len(plan.GangsHit))
		}
	}
}

func TestReplacementOf(t *testing.T) {
	_, pods := failureCluster()
	r := devenv.ReplacementOf(pods[0])
	if r.Spec.NodeName != "" || r.Name != "" || r.GenerateName != "a-0-" || r.Labels[devenv.PodGroupLabel] != "a" || *r.Spec.Priority != 1000 {
		t.Fatalf("replacement %+v", r.ObjectMeta)
	}
	r.Labels["x"] = "y"
	if pods[0].Labels["x"] != "" {
		t.Fatal("the replacement shares the lost pod's labels")
	}
}
