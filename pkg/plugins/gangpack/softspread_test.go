package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Planning must not read every pod of every node where an index or a lazy count does.

// countingNode counts the pods read through GetPods()[i].GetPod() (len(GetPods()), which
// free-room accounting needs, reads no pod).
type countingNode struct {
	fwk.NodeInfo
	reads *int
}

func (n countingNode) GetPods() []fwk.PodInfo {
	pods := n.NodeInfo.GetPods()
	out := make([]fwk.PodInfo, len(pods))
	for i, p := range pods {
		out[i] = countingPod{PodInfo: p, reads: n.reads}
	}
	return out
}

type countingPod struct {
	fwk.PodInfo
	reads *int
}

func (p countingPod) GetPod() *v1.Pod { *p.reads++; return p.PodInfo.GetPod() }

// counted wraps the snapshot's nodes.
func (w *world) counted(reads *int) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, ni := range w.nodeInfos() {
		out = append(out, countingNode{NodeInfo: ni, reads: reads})
	}
	return out
}

// filler returns per bound pods without requests on every node, labelled app=filler.
func filler(nodes []*v1.Node, per int) []*v1.Pod {
	var out []*v1.Pod
	for _, n := range nodes {
		for i := 0; i < per; i++ {
			name := fmt.Sprintf("f-%s-%d", n.Name, i)
			out = append(out, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-" + name),
				Labels: map[string]string{"app": "filler"}}, Spec: v1.PodSpec{NodeName: n.Name}})
		}
	}
	return out
}

// softGang returns n one-GPU members of gang whose first carries a ScheduleAnyway spread
// constraint over the cliques for pods labelled app=filler.
func softGang(gang string, n int) []*v1.Pod {
	out := members(gang, n)
	out[0].Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: testKey,
		WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "filler"}}}}
	return out
}

// Gang soft spread counts matching pods only when two domains tie for the best fit: with one
// best fit it reads no pod; with a tie it still picks the domain with fewer matching pods.
func TestSoftSpreadCountsOnlyOnTies(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nodes     []*v1.Node
		fill      int // filler pods on each node of c2a
		want      string
		wantReads bool
	}{
		{"one best fit", slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2a", "", 2)), 0, "c2a", false},
		{"tie broken by spread", slices.Concat(cliqueNodes("c2a", "", 2), cliqueNodes("c2b", "", 2)), 3, "c2b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := softGang("g", 2)
			fill := filler(tc.nodes[:len(tc.nodes)-2], 3) // pods everywhere but the last clique...
			if tc.fill > 0 {
				fill = filler(tc.nodes[:2], tc.fill) // ...or on c2a only
			}
			w := newWorld(t, nil, tc.nodes, slices.Concat(g, fill), podGroup("g", 2))
			reads := 0
			res, st := w.pl.PreFilter(w.ctx, framework.NewCycleState(), g[0], w.counted(&reads))
			if !st.IsSuccess() {
				t.Fatalf("PreFilter = %v", st)
			}
			if d := domainOf(t, res.NodeNames.UnsortedList()); d != tc.want {
				t.Errorf("pinned %s, want %s", d, tc.want)
			}
			if (reads > 0) != tc.wantReads {
				t.Errorf("read %d pods, want reads: %v", reads, tc.wantReads)
			}
		})
	}
}
