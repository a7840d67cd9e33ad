package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Queueing hints at the plugin level: which parked pods a cluster event requeues.

// A deletion that frees room queues one member per waiting gang without a pin (the first
// live, unbound, ungated member by name), every member of a pinned gang, standalone pods, and
// every member when the deletion is of the gang's own pod.
func TestDeleteHintQueuesOneMemberPerWaitingGang(t *testing.T) {
	bound := standalone("fill")
	bound.Spec.NodeName = "a0"
	unbound := standalone("pending")
	cases := []struct {
		name    string
		gated   string // member created with a scheduling gate
		pin     bool   // the gang holds a pin
		deleted *v1.Pod
		want    map[string]fwk.QueueingHint
	}{
		{"room freed: the first member stands for the gang", "", false, bound,
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.QueueSkip, "g-2": fwk.QueueSkip, "solo": fwk.Queue}},
		{"a gated member does not stand for the gang", "g-0", false, bound,
			map[string]fwk.QueueingHint{"g-1": fwk.Queue, "g-2": fwk.QueueSkip}},
		{"a pinned gang: every member", "", true, bound,
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.Queue, "g-2": fwk.Queue}},
		{"no room freed: nobody", "", false, unbound,
			map[string]fwk.QueueingHint{"g-0": fwk.QueueSkip, "g-1": fwk.QueueSkip, "solo": fwk.QueueSkip}},
		{"a member of the gang deleted: every member", "", false, gangMember("g-9", "g", 1),
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.Queue, "g-2": fwk.Queue}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[string]*v1.Pod{"solo": standalone("solo")}
			var all []*v1.Pod
			for _, name := range []string{"g-2", "g-0", "g-1"} {
				p := gangMember(name, "g", 1)
				if name == tc.gated {
					p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/later"}}
				}
				pods[name] = p
				all = append(all, p)
			}
			all = append(all, pods["solo"])
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, all, podGroup("g", 3))
			if tc.pin {
				w.mustPin(pods["g-1"])
			}
			for name, want := range tc.want {
				got, err := podHint(true, w.pl.freesRoomFor)(klog.Background(), pods[name], tc.deleted, nil)
				if err != nil || got != want {
					t.Errorf("hint for %s = %v, %v; want %v", name, got, err, want)
				}
			}
		})
	}
}

// countingIndexer counts gang listings through the member index.
type countingIndexer struct {
	cache.Indexer
	lists int
}

func (c *countingIndexer) ByIndex(name, value string) ([]any, error) {
	c.lists++
	return c.Indexer.ByIndex(name, value)
}

// waitingGangWorld is a world with one unpinned gang of n members that cannot form (minMember
// above n), its members in name order.
func waitingGangWorld(t testing.TB, n int) (*world, []*v1.Pod) {
	var pods []*v1.Pod
	for i := range n {
		pods = append(pods, gangMember(fmt.Sprintf("g-%04d", i), "g", 1))
	}
	w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, pods, podGroup("g", int32(n+1)))
	return w, pods
}

// The pod-delete hint lists a waiting gang once per change of its members, not once per
// recordPending member, and the representative follows the informer: the first live, unbound,
// ungated member by name, also before the informer's event for a deleted one is delivered.
func TestDeleteHintListsGangOnce(t *testing.T) {
	w, pods := waitingGangWorld(t, 50)
	var counter *countingIndexer
	w.pl.members.WrapIndexer(func(ix cache.Indexer) cache.Indexer {
		counter = &countingIndexer{Indexer: ix}
		return counter
	})
	freed := standalone("fill")
	freed.Spec.NodeName = "a0"
	hint := podHint(true, w.pl.freesRoomFor)
	queued := func() []string {
		var out []string
		for _, p := range pods {
			if h, _ := hint(klog.Background(), p, freed, nil); h == fwk.Queue {
				out = append(out, p.Name)
			}
		}
		return out
	}
	check := func(step string, want string, lists int) {
		t.Helper()
		if got := queued(); !slices.Equal(got, []string{want}) || counter.lists != lists {
			t.Fatalf("%s: queued %v after %d gang listings, want [%s] after %d", step, got, counter.lists, want, lists)
		}
	}
	check("first deletion", "g-0000", 1)
	check("second deletion, no member changed", "g-0000", 1)
	// The representative is deleted; the informer's event is not delivered yet.
	if err := w.podInf.GetIndexer().Delete(pods[0]); err != nil {
		t.Fatal(err)
	}
	pods = pods[1:]
	check("representative gone before its event", "g-0001", 2)
	w.pl.memberEvent(terminating(pods[0]), nil)
	check("after a member's event", "g-0001", 3)
}

// BenchmarkDeleteHint evaluates the pod-delete hint of every parked member of one gang for
// one deletion, after a change of the gang's members (the cache is cold): the total cost
// grows linearly with the gang (ns/member stays flat).
func BenchmarkDeleteHint(b *testing.B) {
	for _, n := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			w, pods := waitingGangWorld(b, n)
			freed := standalone("fill")
			freed.Spec.NodeName = "a0"
			hint := podHint(true, w.pl.freesRoomFor)
			b.ResetTimer()
			for range b.N {
				w.pl.memberEvent(pods[n-1], pods[n-1])
				for _, p := range pods {
					_, _ = hint(klog.Background(), p, freed, nil)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
		})
	}
}

// A standalone pod refused on a node held under a gang's own topology key is requeued when
// that label changes.
func TestStandaloneNodeHintSeesHeldKeys(t *testing.T) {
	const rack = "example.com/rack"
	nodes := []*v1.Node{testNode("r0", "", 1), testNode("r1", "", 1)}
	for _, n := range nodes {
		n.Labels[rack] = "r"
	}
	pg := podGroup("g", 2)
	pg.Annotations = map[string]string{"ome.io/topology-key": rack}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1, solo}, pg)
	w.mustPin(m0)
	moved := nodes[0].DeepCopy()
	moved.Labels[rack] = "s"
	hint, err := w.pl.hintNodeChange(klog.Background(), solo, nodes[0], moved)
	if err != nil || hint != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", hint, err)
	}
	unrelated := nodes[0].DeepCopy()
	delete(unrelated.Labels, rack)
	unrelatedOld := unrelated.DeepCopy()
	unrelated.Labels["other"] = "x"
	if hint, _ := w.pl.hintNodeChange(klog.Background(), solo, unrelatedOld, unrelated); hint != fwk.QueueSkip {
		t.Fatalf("hint for a node without any held key = %v, want QueueSkip", hint)
	}
}
