package gangpack

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain/wire"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// TestExplainMatchesPreFilter: on random worlds (domains of varied size and free room,
// standalone pods, a forming gang holding room with a member waiting at Permit), explain's
// decision for a new gang, computed from the API objects and the ledger's served document,
// is PreFilter's: the same domain, or the same message.
func TestExplainMatchesPreFilter(t *testing.T) {
	preferred := 0 // seeds where the members' preference beat best fit
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		w, waiting, desc := randomWorld(t, rng)
		pg, members := newGang(rng, w.nodes)
		w.putPodGroup(pg)
		for _, m := range members {
			w.addPod(m)
		}
		w.resnap(waiting...)
		got, _ := w.explainAgrees(t, pg, members[0], nil, fmt.Sprintf("seed %d (%s)", seed, desc))
		if strings.HasPrefix(got.Reason, "preferred:") {
			preferred++
		}
	}
	if preferred < 10 {
		t.Errorf("the preference beat best fit in %d of 300 worlds, want at least 10: the preferences are not exercised", preferred)
	}
	t.Logf("the preference beat best fit in %d of 300 worlds", preferred)
}

// randomWorld is 2 to 4 domains of 1 to 4 nodes, standalone pods bound on some, and half the
// time a forming gang whose first member waits at Permit.
func randomWorld(t *testing.T, rng *rand.Rand) (*world, []*v1.Pod, string) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	var desc []string
	var waiting []*v1.Pod
	for d := 0; d < 2+rng.Intn(3); d++ {
		size, gpus := 1+rng.Intn(4), []int64{4, 8}[rng.Intn(2)]
		for i := 0; i < size; i++ {
			name := fmt.Sprintf("d%d-%d", d, i)
			nodes = append(nodes, testNode(name, fmt.Sprintf("d%d", d), gpus))
			if rng.Intn(5) < 2 {
				p := standalone("solo-" + name)
				p.Spec.Containers[0].Resources.Requests[testGPU] = *resource.NewQuantity(1+rng.Int63n(gpus), resource.DecimalSI)
				p.Spec.NodeName = name
				pods = append(pods, p)
			}
		}
		desc = append(desc, fmt.Sprintf("d%d %d×%d", d, size, gpus))
	}
	w := newWorld(t, nil, nodes, pods)
	if rng.Intn(2) == 0 {
		m, g := 2+rng.Intn(3), []int64{1, 2, 4}[rng.Intn(3)]
		w.putPodGroup(podGroup("form", int32(m)))
		var first *v1.Pod
		for i := 0; i < m; i++ {
			p := gangMember(fmt.Sprintf("form-%d", i), "form", g)
			w.addPod(p)
			if i == 0 {
				first = p
			}
		}
		w.resnap()
		if c, st := w.preFilter(first); st.IsSuccess() {
			node := c.res.NodeNames.UnsortedList()[0]
			c.reserveOn(node)
			waiting = append(waiting, assumed(first, node))
			desc = append(desc, fmt.Sprintf("forming %d×%d on %s", m, g, node))
		}
	}
	return w, waiting, strings.Join(desc, ", ")
}

// newGang is the gang to explain: 1 to 5 members of 1 to 8 GPUs, a third of the time one per
// node; half the time its members prefer (weight 50) one or two random nodes, as OME's
// migrations prefer their hint nodes, and a quarter of those members also another (weight 10).
func newGang(rng *rand.Rand, nodes []*v1.Node) (*schedv1alpha1.PodGroup, []*v1.Pod) {
	n, g, apart := 1+rng.Intn(5), []int64{1, 1, 2, 4, 8}[rng.Intn(5)], rng.Intn(3) == 0
	var hints []string
	if rng.Intn(2) == 0 {
		for k := 1 + rng.Intn(2); k > 0; k-- {
			hints = append(hints, nodes[rng.Intn(len(nodes))].Name)
		}
	}
	var out []*v1.Pod
	for i := 0; i < n; i++ {
		p := gangMember(fmt.Sprintf("new-%d", i), "new", g)
		p.Spec.Affinity = &v1.Affinity{}
		if apart {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{PodGroupLabel: "new"}}, TopologyKey: v1.LabelHostname}}}
		}
		if hints != nil {
			terms := []v1.PreferredSchedulingTerm{preferredHosts(50, hints...)}
			if rng.Intn(4) == 0 {
				terms = append(terms, preferredHosts(10, nodes[rng.Intn(len(nodes))].Name))
			}
			p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
		}
		out = append(out, p)
	}
	return podGroup("new", int32(n)), out
}

// preferredHosts is a preferred node-affinity term toward the named nodes.
func preferredHosts(weight int32, hosts ...string) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hosts}}}}
}

// explainAgrees explains the gang of member as kubectl ome would (from the API objects, the
// ledger's served reservations and dra) and runs PreFilter for it; it reports a disagreement
// (not the same domain, or not the same wait) and returns explain's answer and PreFilter's
// domain ("" when it waits).
func (w *world) explainAgrees(t *testing.T, pg *schedv1alpha1.PodGroup, member *v1.Pod, dra *explain.DRA, label string) (*explain.Result, string) {
	t.Helper()
	doc := explain.Reservations(wire.Wire(w.pl.ledger.Holds(), w.pl.ledger.AssumedMembers(), w.pl.ledger.Active(), w.pl.args))
	c := &explain.Cluster{Nodes: w.nodes, Pods: w.pods, Reservations: &doc, Args: w.pl.args, DRA: dra}
	got, err := explain.Explain(c, explain.Request{PodGroup: pg, Pod: member})
	if err != nil {
		t.Fatal(err)
	}
	cyc, st := w.preFilter(member)
	want := ""
	if st.IsSuccess() {
		want = plan.ReadPin(cyc.cs).Domain
	}
	if got.ChosenDomain != want || (want == "" && !strings.HasPrefix(got.Reason, st.Message())) {
		t.Errorf("%s: explain %q (%s), PreFilter %q (%v)", label, got.ChosenDomain, got.Reason, want, st)
	}
	return got, want
}
