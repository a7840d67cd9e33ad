package gangpack

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// preemptedBy is a copy of p being deleted by a preemption: the DisruptionTarget condition
// the scheduler sets, and a deletionTimestamp the API server set to the deletion plus grace.
func preemptedBy(p *v1.Pod, deadline time.Time) *v1.Pod {
	q := p.DeepCopy()
	q.Status.Conditions = append(q.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler})
	return deletingUntil(q, deadline)
}

// deletingUntil is a copy of p deleted gracefully: the API server's deletionTimestamp is when
// its grace period ends.
func deletingUntil(p *v1.Pod, deadline time.Time) *v1.Pod {
	q := p.DeepCopy()
	ts := metav1.NewTime(deadline)
	q.DeletionTimestamp = &ts
	q.DeletionGracePeriodSeconds = ptr.To[int64](60)
	return q
}

// gone removes the pods from the world: the informer, the snapshot's pod list (after resnap).
func (w *world) gone(pods ...*v1.Pod) {
	w.t.Helper()
	for _, p := range pods {
		w.pods = slices.DeleteFunc(w.pods, func(q *v1.Pod) bool { return q.UID == p.UID })
		_ = w.podInf.GetIndexer().Delete(p)
	}
	w.resnap()
}

// awaitRemaining polls the clientset until the pods left are want (evictions run off the
// scheduling cycle), and fails after testWait.
func (w *preemptWorld) awaitRemaining(want ...string) {
	w.t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		got := w.remaining()
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("pods left %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantWait(t *testing.T, st *fwk.Status, want string) {
	t.Helper()
	if st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PostFilter = %v, want Unschedulable %q", st, want)
	}
}

// A gang restarting in place (its old members Terminating in domain a, replacements pending)
// waits for the room its own old members give back; it does not evict the lower-priority
// gang in domain b.
func TestPreemptRestartWaitsForOwnTerminatingMembers(t *testing.T) {
	until := time.Now().Add(60 * time.Second)
	old := []*v1.Pod{
		deletingUntil(placedOn(prio(gangMember("hi-old-0", "hi", 1), 10), "a1"), until),
		deletingUntil(placedOn(prio(gangMember("hi-old-1", "hi", 1), 10), "a2"), until),
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(old, gangOn("low", 1, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("hi", 2))
	_, st := w.postFilter(hi[0])
	wantWait(t, st, "; preemption: waiting for 2 terminating pods to give back room in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "hi-old-0", "hi-old-1", "low-0", "low-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// The record of the victims outlives the preemptor's timeout while they still terminate: past
// the timeout (its hold ended, the domain rests) the gang waits and evicts no second domain.
func TestPreemptRecordOutlivesTheTimeout(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	w.awaitRemaining("hi-0", "hi-1", "mid-0", "mid-1")
	for _, p := range victims { // a long grace period: still Terminating long after the timeout
		w.updatePod(preemptedBy(p, time.Now().Add(time.Hour)))
	}
	w.resnap()
	later := time.Now().Add(601 * time.Second) // hi's scheduleTimeoutSeconds is 600
	w.pl.ledger.SetNow(func() time.Time { return later })
	_, st := w.postFilter(hi[1])
	wantWait(t, st, "; preemption: waiting for 2 preempted pods to terminate in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// After a leader change the new plugin has no record of the preemption, but the victims still
// terminate in domain a: the gang waits for their room and evicts no second domain.
func TestPreemptAfterLeaderChangeWaitsForVictims(t *testing.T) {
	until := time.Now().Add(time.Hour)
	victims := gangOn("low", 1, "a1", "a2")
	for i, p := range victims {
		victims[i] = preemptedBy(p, until)
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(victims, gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	_, st := w.postFilter(hi[0])
	wantWait(t, st, "; preemption: waiting for 2 terminating pods to give back room in domain a")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "low-0", "low-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// A pod stuck Terminating well past its deletionTimestamp (an unreachable node) does not
// block preemption forever: its room no longer counts as coming back.
func TestPreemptStuckTerminatingDoesNotBlock(t *testing.T) {
	victims := gangOn("low", 1, "a1", "a2")
	for i, p := range victims {
		victims[i] = preemptedBy(p, time.Now().Add(-10*time.Minute))
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(victims, gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	w.awaitRemaining("hi-0", "hi-1", "low-0", "low-1")
}

// A gang preempts with the lowest priority among its live members: the member being
// scheduled has priority 10, its sibling 1, so pods of priority 5 are no victims.
func TestPreemptMixedPriorityGang(t *testing.T) {
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 1)}
	pods := append(append(gangOn("low", 5, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	if res != nil {
		t.Fatalf("PostFilter = %+v, %v; want no nomination", res, st)
	}
	wantWait(t, st, "; preemption: no lower-priority pods to evict")
	if len(w.remaining()) != 6 {
		t.Fatalf("evicted: %v", w.remaining())
	}
}

// Every forming reservation overlapping the freed domain counts, whatever its topology key:
// lower-priority holders are all released (and the preemptor holds the domain), one of equal
// or higher priority keeps the domain from being chosen.
func TestPreemptHoldersOfTheDomain(t *testing.T) {
	const rackKey = "example.com/rack"
	type holder struct {
		gang, key, domain, node string
		priority                int32
	}
	for _, tc := range []struct {
		name     string
		holders  []holder
		preempts bool
	}{
		{"two lower holders under the key", []holder{{"l1", testKey, "a", "a2", 1}, {"l2", testKey, "a", "a3", 1}}, true},
		{"lower holder under another key", []holder{{"l1", rackKey, "r1", "a2", 1}}, true},
		{"higher holder under another key", []holder{{"l1", rackKey, "r1", "a2", 20}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*v1.Node
			for i, n := range []string{"a1", "a2", "a3", "a4"} {
				node := testNode(n, "a", 1)
				node.Labels[rackKey] = "r" + string(rune('1'+i/2))
				nodes = append(nodes, node)
			}
			pods := []*v1.Pod{placedOn(prio(standalone("s1"), 1), "a1"), placedOn(prio(standalone("s4"), 1), "a4")}
			pgs := []*schedv1alpha1.PodGroup{podGroup("hi", 4)}
			for _, h := range tc.holders {
				pods = append(pods, prio(gangMember(h.gang+"-0", h.gang, 1), h.priority), prio(gangMember(h.gang+"-1", h.gang, 1), h.priority))
				pgs = append(pgs, podGroup(h.gang, 2))
			}
			var hi []*v1.Pod
			for i := 0; i < 4; i++ {
				hi = append(hi, prio(gangMember("hi-"+string(rune('0'+i)), "hi", 1), 10))
			}
			w := newPreemptWorld(t, nodes, append(pods, hi...), pgs...)
			for _, h := range tc.holders {
				_, out := w.pl.ledger.Pin(placement.PinRequest{Gang: testNS + "/" + h.gang, Owner: "uid-" + h.gang, Key: h.key, Domain: h.domain,
					Reserved: placement.Reservation{h.node: {Count: 1, Each: topology.Resources{testGPU: 1}}},
					Capacity: w.pl.planner.SnapshotCapacity(), Remaining: 2, MinMember: 2}, gang.Info{}, "")
				if out != placement.Pinned {
					t.Fatalf("pin %s: %v", h.gang, out)
				}
			}
			res, st := w.postFilter(hi[0])
			if !tc.preempts {
				wantWait(t, st, "; preemption: evicting lower-priority pods would not free one domain for 4 members")
				if _, ok := w.pl.ledger.Commitment(testNS + "/l1"); !ok {
					t.Fatal("the higher-priority holder was released")
				}
				if len(w.remaining()) != len(pods)+4 {
					t.Fatalf("evicted: %v", w.remaining())
				}
				return
			}
			assertNominated(t, res, st, "a1", "a2", "a3", "a4")
			for _, h := range tc.holders {
				if _, ok := w.pl.ledger.Commitment(testNS + "/" + h.gang); ok {
					t.Fatalf("lower-priority holder %s kept its reservation", h.gang)
				}
			}
			if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
				t.Fatalf("hi pin = %+v, %v; want a hold on a", c, ok)
			}
		})
	}
}

// A standalone preemptor's node, freed by its victims, is not taken by a lower-priority gang
// while the preemptor is pending: the gang's planning leaves the node's room to it, the
// preemptor passes Filter there, and no second pod is evicted.
func TestPreemptStandaloneNodeKeptFromLowerGang(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	v := placedOn(prio(standalone("v"), 1), "a1")
	other := placedOn(prio(standalone("other"), 1), "a2")
	solo := prio(standalone("solo"), 10)
	g := prio(gangMember("g-0", "g", 1), 1)
	w := newPreemptWorld(t, nodes, []*v1.Pod{v, other, solo, g}, podGroup("g", 1))
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if !st.IsSuccess() || res == nil || res.NominatingInfo.NominatedNodeName != "a1" {
		t.Fatalf("PostFilter(solo) = %+v, %v; want a1 nominated", res, st)
	}
	w.awaitRemaining("g-0", "other", "solo")
	w.gone(v) // the victim is gone; solo waits in backoff, the lower-priority gang plans first
	if c, st := w.preFilter(g); st.IsSuccess() && slices.Contains(candidateNames(c.res), "a1") {
		t.Fatalf("lower-priority gang g planned onto a1, the preemptor's node: %v", candidateNames(c.res))
	}
	cs := framework.NewCycleState()
	if _, st := w.pl.PreFilter(w.ctx, cs, solo, w.nodeInfos()); !st.IsSuccess() && st.Code() != fwk.Skip {
		t.Fatalf("PreFilter(solo) = %v", st)
	}
	a1, _ := w.h.snapshot.NodeInfos().Get("a1")
	if st := w.pl.Filter(w.ctx, cs, solo, a1); !st.IsSuccess() {
		t.Fatalf("Filter(solo on a1) = %v, want the preemptor's node free for it", st)
	}
}

// Eviction calls run off the scheduling cycle: PostFilter returns while the API is blocked,
// and the victims are deleted once it answers.
func TestPreemptEvictsOffTheCycle(t *testing.T) {
	pods := append(gangOn("low", 1, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...)
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	release, reached := make(chan struct{}), make(chan struct{}, 8)
	w.h.client.(*fake.Clientset).PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		reached <- struct{}{}
		<-release
		return false, nil, nil
	})
	type answer struct {
		res *fwk.PostFilterResult
		st  *fwk.Status
	}
	statuses := noRoomFor(t, w, hi[0])
	done := make(chan answer, 1)
	go func() {
		res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), hi[0], statuses)
		done <- answer{res, st}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("PostFilter still blocked on the API after 5s")
	}
	assertNominated(t, a.res, a.st, "a1", "a2")
	select { // the delete call is under way while PostFilter has returned
	case <-reached:
	case <-time.After(testWait):
		t.Fatal("no delete call reached the API")
	}
	close(release)
	w.awaitRemaining("hi-0", "hi-1", "mid-0", "mid-1")
	if notes := w.eventNotes(); !strings.HasPrefix(notes[testNS+"/low-0"], "Preempted by gang") {
		t.Fatalf("events %v", notes)
	}
}

// noRoomFor runs PreFilter for a gang member (which must fail) and returns the statuses the
// framework hands PostFilter.
func noRoomFor(t *testing.T, w *preemptWorld, p *v1.Pod) fwk.NodeToStatusReader {
	t.Helper()
	if _, st := w.preFilter(p); st.IsSuccess() {
		t.Fatalf("PreFilter(%s) succeeded", p.Name)
	}
	return framework.NewDefaultNodeToStatus()
}
