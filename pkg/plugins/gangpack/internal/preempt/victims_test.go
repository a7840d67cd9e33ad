package preempt

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The Evaluator's pure parts; evaluator_test.go runs it against a fake Interface, and the
// plugin's tests run preemption scenarios end to end.

// testNode is a node with one GPU.
func testNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{"nvidia.com/gpu": "1", v1.ResourcePods: "110"}).Obj()
}

// lowMember is a priority-10 member of gang bound to node, requesting one GPU.
func lowMember(name, gangName, node string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Node(node).Priority(10).
		Req(map[v1.ResourceName]string{"nvidia.com/gpu": "1"}).Obj()
	p.Labels = map[string]string{gang.Label: gangName}
	return p
}

// nodeInfos is the scheduling snapshot's view of nodes with pods bound to them.
func nodeInfos(t *testing.T, nodes []*v1.Node, pods []*v1.Pod) []fwk.NodeInfo {
	list, err := schedcache.NewSnapshot(pods, nodes).NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// The partners of a placement group are one victim unit: evicting one evicts all of them,
// and the unit frees room on every partner's nodes; a gang outside the group stays its own
// unit.
func TestPlacementGroupIsOneVictimUnit(t *testing.T) {
	nodes := []*v1.Node{testNode("a0"), testNode("a1"), testNode("b0")}
	pods := []*v1.Pod{lowMember("prefill-0", "prefill", "a0"), lowMember("decode-0", "decode", "a1"), lowMember("other-0", "other", "b0")}
	infos := nodeInfos(t, nodes, pods)
	groupOf := func(q *v1.Pod) string {
		if g := q.Labels[gang.Label]; g == "prefill" || g == "decode" {
			return "group:ns/svc"
		}
		return ""
	}
	units := victimUnits(infos, 100, "", nil, groupOf, nil)
	if len(units) != 2 {
		t.Fatalf("%d units, want the group and the other gang", len(units))
	}
	g := units[0]
	slices.Sort(g.gangs)
	if g.unit.Name != "group:ns/svc" || !slices.Equal(g.gangs, []string{"ns/decode", "ns/prefill"}) || g.unit.Pods != 2 ||
		len(g.unit.Frees) != 2 {
		t.Fatalf("group unit %+v (gangs %v), want both partners' pods on a0 and a1", g.unit, g.gangs)
	}
	if o := units[1]; o.unit.Name != "ns/other" || !slices.Equal(o.gangs, []string{"ns/other"}) {
		t.Fatalf("other unit %+v (gangs %v)", o.unit, o.gangs)
	}
	// Without a group resolver each gang is its own unit.
	if n := len(victimUnits(infos, 100, "", nil, nil, nil)); n != 3 {
		t.Fatalf("%d units without groups, want 3", n)
	}
}

// The PDB counting follows the budget's allowed disruptions pod by pod.
func TestPDBViolations(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	mk := func(name string, app string) *v1.Pod {
		p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Obj()
		p.Labels = map[string]string{"app": app}
		return p
	}
	pdb := &policy.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"},
		Spec: policy.PodDisruptionBudgetSpec{Selector: sel}, Status: policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}
	empty := &policy.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "empty"},
		Spec: policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}}}
	other := pdb.DeepCopy()
	other.Namespace = "elsewhere"
	other.Status.DisruptionsAllowed = 0
	pods := []*v1.Pod{mk("p0", "x"), mk("p1", "x"), mk("p2", "x"), mk("p3", "y")}
	if got := pdbViolations([]*policy.PodDisruptionBudget{pdb, empty, other}, pods); got != 2 {
		t.Fatalf("violations = %d, want 2", got)
	}
	pdb.Status.DisruptedPods = map[string]metav1.Time{"p1": metav1.Now()}
	if got := pdbViolations([]*policy.PodDisruptionBudget{pdb}, pods); got != 1 {
		t.Fatalf("violations with p1 already disrupted = %d, want 1", got)
	}
	if got := pdbViolations(nil, pods); got != 0 {
		t.Fatalf("violations without budgets = %d", got)
	}
}
