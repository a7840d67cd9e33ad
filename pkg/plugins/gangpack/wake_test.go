package gangpack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// A member created with a scheduling gate never runs PreFilter, and kube-scheduler runs no
// queueing hint for an unassigned pod's creation: the pod informer's event itself wakes the
// recordPending member of the gang it completes, which then reserves and waits at Permit.
func TestGatedMemberWakesIncompleteGang(t *testing.T) {
	cases := []struct {
		name      string
		minMember int32
		parkFirst bool // member 1 parked with the templates message first
		want      bool
	}{
		{"the gated member completes the gang", 2, true, true},
		{"still fewer live members than minMember", 3, true, false},
		{"the gang was never found incomplete", 2, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m1 := gangMember("x-1", "x", 1)
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, []*v1.Pod{m1}, podGroup("x", tc.minMember))
			if tc.parkFirst {
				if _, st := w.preFilter(m1); !strings.Contains(st.Message(), "waiting for all PodGroup member templates for ns/x: 1 of") {
					t.Fatalf("PreFilter(x-1) = %v, want the templates wait", st)
				}
			}
			m2 := gangMember("x-2", "x", 1)
			m2.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/later"}}
			w.addPod(m2)
			w.pl.memberEvent(nil, m2)
			if got := slices.Contains(w.h.activated, "ns/x-1"); got != tc.want {
				t.Fatalf("x-1 activated = %v (activated %v), want %v", got, w.h.activated, tc.want)
			}
			if !tc.want {
				return
			}
			if st := w.mustPin(m1).reserveOn("a0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit(x-1) = %v, want Wait", st)
			}
		})
	}
}

// spreadLeader is a member with a DoNotSchedule spread constraint (the gang's spread anchor).
func spreadLeader(name, group string) *v1.Pod {
	p := gangMember(name, group, 1)
	p.Labels["role"] = "leader"
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
		WhenUnsatisfiable: v1.DoNotSchedule}}
	return p
}

// A member parked behind its unscheduled spread anchor is woken when the anchor is deleted or
// relabelled (kube-scheduler re-evaluates only the changed pod itself), not when the anchor's
// status changes.
func TestAwaitedSiblingChangeWakesWaiter(t *testing.T) {
	relabelled := func(p *v1.Pod) *v1.Pod {
		q := p.DeepCopy()
		q.Labels["role"] = "other"
		return q
	}
	statusOnly := func(p *v1.Pod) *v1.Pod {
		q := p.DeepCopy()
		q.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		return q
	}
	cases := []struct {
		name   string
		change func(*v1.Pod) *v1.Pod // nil: deleted
		want   bool
	}{
		{"anchor deleted", nil, true},
		{"anchor relabelled", relabelled, true},
		{"anchor status updated", statusOnly, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leader, worker := spreadLeader("g-0", "g"), gangMember("g-1", "g", 1)
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, []*v1.Pod{leader, worker}, podGroup("g", 2))
			if _, st := w.preFilter(worker); !strings.Contains(st.Message(), "waiting for gang spread anchor ns/g-0") {
				t.Fatalf("PreFilter(worker) = %v, want the anchor wait", st)
			}
			var cur *v1.Pod
			if tc.change != nil {
				cur = tc.change(leader)
			}
			w.pl.memberEvent(leader, cur)
			if got := slices.Contains(w.h.activated, "ns/g-1"); got != tc.want {
				t.Fatalf("worker activated = %v (activated %v), want %v", got, w.h.activated, tc.want)
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
