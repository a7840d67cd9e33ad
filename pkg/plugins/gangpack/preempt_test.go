package gangpack

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	policylisters "k8s.io/client-go/listers/policy/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Preemption at the plugin level (PostFilter with preemption on): the world it runs in; a
// gang's preemption from the eviction to the hold on the freed domain, evictions off the
// scheduling cycle, preemption off, and degenerate input. preempt_*_test.go cover the rest
// by concern.

// preemptWorld is a world with preemption on: every pod also exists in the fake clientset
// (so deletions are observable) and PodDisruptionBudgets come from pdbs.
type preemptWorld struct {
	*world
	pdbs cache.Indexer
}

func newPreemptWorld(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) *preemptWorld {
	t.Helper()
	return newPreemptWorldArgs(t, testArgs(), nodes, pods, pgs...)
}

// newPreemptWorldArgs is newPreemptWorld with the given arguments (preemption turned on).
func newPreemptWorldArgs(t *testing.T, args *gang.Args, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) *preemptWorld {
	t.Helper()
	return newPreemptWorldWith(t, nil, args, nodes, pods, pgs...)
}

// newPreemptWorldWith is newPreemptWorldArgs with dra as the framework's DRA manager.
func newPreemptWorldWith(t *testing.T, dra fwk.SharedDRAManager, args *gang.Args, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) *preemptWorld {
	t.Helper()
	metrics.Register()
	args.Preemption = true
	w := newWorldWith(t, dra, args, nodes, pods, pgs...)
	for _, p := range pods {
		if _, err := w.h.client.CoreV1().Pods(p.Namespace).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	w.pl.evaluator.UsePDBs(policylisters.NewPodDisruptionBudgetLister(idx))
	return &preemptWorld{world: w, pdbs: idx}
}

// prio sets a pod's spec.priority.
func prio(p *v1.Pod, v int32) *v1.Pod {
	p.Spec.Priority = ptr.To(v)
	return p
}

// placedOn is a copy of p bound to node.
func placedOn(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	return p
}

// gangOn places members group-0.. of a gang on the nodes, one each, at priority pr.
func gangOn(group string, pr int32, nodes ...string) []*v1.Pod {
	var out []*v1.Pod
	for i, n := range nodes {
		out = append(out, placedOn(prio(gangMember(group+"-"+string(rune('0'+i)), group, 1), pr), n))
	}
	return out
}

// twoDomains is domains a and b of two 1-GPU nodes each.
func twoDomains() []*v1.Node {
	return []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1), testNode("b1", "b", 1), testNode("b2", "b", 1)}
}

// postFilter runs PreFilter (which must fail) and then PostFilter for a gang member.
func (w *preemptWorld) postFilter(p *v1.Pod) (*fwk.PostFilterResult, *fwk.Status) {
	w.t.Helper()
	c, st := w.preFilter(p)
	if st.IsSuccess() {
		w.t.Fatalf("PreFilter(%s) succeeded, want a failure", p.Name)
	}
	return w.pl.PostFilter(w.ctx, c.cs, p, framework.NewDefaultNodeToStatus())
}

// settle waits until no eviction is under way (evictions run off the scheduling cycle), and
// fails after testWait.
func (w *preemptWorld) settle() {
	w.t.Helper()
	deadline := time.Now().Add(testWait)
	for w.pl.evaluator.InFlight() > 0 {
		if time.Now().After(deadline) {
			w.t.Fatalf("evictions still under way after %v", testWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// remaining returns the names of the pods still in the clientset, sorted, once no eviction is
// under way.
func (w *preemptWorld) remaining() []string {
	w.t.Helper()
	w.settle()
	return w.listNow()
}

// listNow returns the names of the pods in the clientset now, sorted.
func (w *preemptWorld) listNow() []string {
	w.t.Helper()
	list, err := w.h.client.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func (w *preemptWorld) eventNotes() map[string]string {
	w.t.Helper()
	w.settle()
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	out := map[string]string{}
	for _, e := range w.h.events {
		if e.reason == "Preempted" {
			out[e.regarding] = e.note
		}
	}
	return out
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

func counter(t *testing.T, preemptor, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.PreemptionTotal.WithLabelValues(preemptor, result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func victimCounter(t *testing.T, unit string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.PreemptionVictimsTotal.WithLabelValues(unit))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func assertNominated(t *testing.T, res *fwk.PostFilterResult, st *fwk.Status, nodes ...string) {
	t.Helper()
	if !st.IsSuccess() {
		t.Fatalf("PostFilter = %v, want success", st)
	}
	if res == nil || res.NominatingInfo == nil || res.NominatingInfo.NominatingMode != fwk.ModeOverride ||
		!slices.Contains(nodes, res.NominatingInfo.NominatedNodeName) {
		t.Fatalf("PostFilter result %+v, want a nomination to one of %v", res, nodes)
	}
}

func wantWait(t *testing.T, st *fwk.Status, want string) {
	t.Helper()
	if st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PostFilter = %v, want Unschedulable %q", st, want)
	}
}

// A high-priority gang evicts exactly one whole gang, the one of lower priority, pins and
// holds its domain, and the other gang is untouched (E1, E8).
func TestPreemptGangEvictsOneWholeGang(t *testing.T) {
	pods := append(gangOn("low", 1, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...)
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	before, beforeGangs := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted), victimCounter(t, metrics.UnitGang)

	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	want := "Preempted by gang " + testNS + "/hi to place it in domain a"
	notes := w.eventNotes()
	if len(notes) != 2 || notes[testNS+"/low-0"] != want || notes[testNS+"/low-1"] != want {
		t.Fatalf("Preempted events %v, want %q on low-0 and low-1", notes, want)
	}
	c, ok := w.pl.ledger.Commitment(testNS + "/hi")
	if !ok || c.Domain != "a" || !c.Forming() {
		t.Fatalf("hi pin = %+v, %v; want a forming pin on a", c, ok)
	}
	if d := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted) - before; d != 1 {
		t.Fatalf("preemption_total{gang,preempted} grew by %v, want 1", d)
	}
	if d := victimCounter(t, metrics.UnitGang) - beforeGangs; d != 1 {
		t.Fatalf("preemption_victims_total{gang} grew by %v, want 1", d)
	}
	pdCond, err := w.h.client.CoreV1().Pods(testNS).Get(w.ctx, "low-0", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("low-0 still there: %v %v", pdCond, err)
	}
}

// The freed domain is held even when the victims were packed on one node of it and its other
// nodes stay full: the reservation covers only nodes the eviction frees (a full node must not
// be counted as room for one member, or the hold does not fit and a sibling preempts again).
func TestPreemptHoldsRoomOfPackedVictims(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 2), testNode("a2", "a", 2), testNode("b1", "b", 2), testNode("b2", "b", 2)}
	pods := []*v1.Pod{
		// low packs both members on a1; a2, b1 and b2 are full with pods the gang may not evict.
		placedOn(prio(gangMember("low-0", "low", 1), 1), "a1"),
		placedOn(prio(gangMember("low-1", "low", 1), 1), "a1"),
		placedOn(prio(gangMember("top-0", "top", 2), 50), "a2"),
		placedOn(prio(gangMember("top-1", "top", 2), 50), "b1"),
		placedOn(prio(gangMember("top-2", "top", 2), 50), "b2"),
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, nodes, append(pods, hi...), podGroup("low", 2), podGroup("top", 3), podGroup("hi", 2))

	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "top-0", "top-1", "top-2"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	c, ok := w.pl.ledger.Commitment(testNS + "/hi")
	if !ok || c.Domain != "a" || !c.Forming() {
		t.Fatalf("hi pin = %+v, %v; want a forming pin on a", c, ok)
	}
	if sl := c.Reserved["a1"]; sl.Count != 2 || len(c.Reserved) != 1 {
		t.Fatalf("hi reserves %+v, want both members on a1 only", c.Reserved)
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

// Preemption off: PostFilter without a pin changes nothing.
func TestPreemptOff(t *testing.T) {
	pods := gangOn("low", 1, "a1", "a2", "b1", "b2")
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 4), podGroup("hi", 2))
	w.pl.args.Preemption = false
	res, st := w.postFilter(hi[0])
	if st.Code() != fwk.Unschedulable || st.Message() != "" || !clears(res) || len(w.remaining()) != 6 {
		t.Fatalf("PostFilter = %v, %v", res, st)
	}
}

// Bad input never panics: a preemptor without nodes, pods without requests or priority,
// a nil status reader.
func TestPreemptDegenerateInputs(t *testing.T) {
	w := newPreemptWorld(t, nil, []*v1.Pod{standalone("solo")})
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), standalone("solo"), nil)
	if st.Code() != fwk.Unschedulable || !clears(res) {
		t.Fatalf("PostFilter = %v, %v", res, st)
	}
	empty := st2pod("empty")
	w2 := newPreemptWorld(t, twoDomains(), []*v1.Pod{empty, placedOn(st2pod("x"), "a1")})
	if _, st := w2.pl.PostFilter(w2.ctx, framework.NewCycleState(), empty, filteredOut()); st.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter(no requests) = %v", st)
	}
}

// st2pod is a standalone pod without requests or priority.
func st2pod(name string) *v1.Pod {
	p := standalone(name)
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	return p
}
