package gangpack

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

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
	metrics.Register()
	args.Preemption = true
	w := newWorld(t, args, nodes, pods, pgs...)
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

// hiPreemptedLow is the world of a low gang on a1, a2 and a mid gang on b1, b2, where hi-0
// of a two-member high-priority gang has just evicted the low gang. It returns the low
// gang's pods (the victims) and the hi members.
func hiPreemptedLow(t *testing.T) (w *preemptWorld, victims, hi []*v1.Pod) {
	t.Helper()
	pods := append(gangOn("low", 1, "a1", "a2"), gangOn("mid", 5, "b1", "b2")...)
	hi = []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w = newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("mid", 2), podGroup("hi", 2))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	return w, pods[:2], hi
}

// While the victims terminate the gang keeps its pin and does not preempt again; once they
// are gone the pin stands and the members are placed in the domain (docs/design.md §19, item 8).
func TestPreemptNoStormWhileVictimsTerminate(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	// The informer still shows the victims, Terminating.
	for _, p := range victims {
		w.updatePod(terminating(p))
	}
	w.resnap()
	before := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted)
	events := len(w.eventNotes())
	res, st := w.postFilter(hi[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "; preemption: waiting for 2 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter while victims terminate = %v", st)
	}
	if res == nil || res.NominatingInfo == nil || res.NominatingInfo.NominatedNodeName == "" {
		t.Fatalf("waiting member not nominated: %+v", res)
	}
	if counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted) != before || len(w.eventNotes()) != events {
		t.Fatal("preempted again while victims terminate")
	}
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("pin dropped while victims terminate: %+v %v", c, ok)
	}
	// The victims are gone: the pinned domain has room and the member goes there.
	w.pods = slices.DeleteFunc(w.pods, func(p *v1.Pod) bool { return strings.HasPrefix(p.Name, "low-") })
	for _, p := range victims {
		_ = w.podInf.GetIndexer().Delete(p)
	}
	w.resnap()
	c := w.mustPin(hi[1])
	if got := candidateNames(c.res); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("candidates %v, want a1 a2", got)
	}
}

// The informer learns that the victims are gone before the scheduling snapshot does. A
// cycle on the older snapshot still sees the domain full: the gang keeps its pin and waits,
// and does not take the missing room for a reason to preempt the other gang.
func TestPreemptWaitsUntilSnapshotDropsVictims(t *testing.T) {
	w, victims, hi := hiPreemptedLow(t)
	for _, p := range victims { // gone from the informer; the snapshot is not rebuilt
		_ = w.podInf.GetIndexer().Delete(p)
	}
	before := counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted)
	_, st := w.postFilter(hi[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "; preemption: waiting for 2 preempted pods to terminate in domain a" {
		t.Fatalf("PostFilter on a snapshot that still holds the victims = %v", st)
	}
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if counter(t, metrics.PreemptorGang, metrics.PreemptResultPreempted) != before {
		t.Fatal("preempted again before the snapshot dropped the victims")
	}
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("pin = %+v %v, want a", c, ok)
	}
}

func candidateNames(r *fwk.PreFilterResult) []string {
	if r == nil {
		return nil
	}
	out := r.NodeNames.UnsortedList()
	sort.Strings(out)
	return out
}

// A clique with one free node and one low standalone pod beats a clique holding a two-member
// gang: one victim, not two (E2).
func TestPreemptFewestVictims(t *testing.T) {
	pods := append(gangOn("low", 1, "b1", "b2"), placedOn(prio(standalone("solo"), 1), "a2"))
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("hi", 2))
	beforePods := victimCounter(t, metrics.UnitPod)
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "a1", "a2")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "low-0", "low-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if d := victimCounter(t, metrics.UnitPod) - beforePods; d != 1 {
		t.Fatalf("victims{pod} grew by %v, want 1", d)
	}
}

// Equal priority (or higher) pods are never victims: nothing is evicted and the reason says so
// (E3); preemptionPolicy Never evicts nothing either (E4).
func TestPreemptNoVictimReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		never  bool
		lowPri int32
		want   string
	}{
		{"equal priority", false, 10, "; preemption: no lower-priority pods to evict"},
		{"higher priority", false, 11, "; preemption: no lower-priority pods to evict"},
		{"never", true, 1, "; preemption: preemptionPolicy is Never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := append(gangOn("low", tc.lowPri, "a1", "a2"), gangOn("other", tc.lowPri, "b1", "b2")...)
			hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
			if tc.never {
				hi[0].Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
			}
			w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 2), podGroup("other", 2), podGroup("hi", 2))
			before := counter(t, metrics.PreemptorGang, metrics.PreemptResultNoCandidate)
			res, st := w.postFilter(hi[0])
			if st.Code() != fwk.Unschedulable || st.Message() != tc.want || res != nil {
				t.Fatalf("PostFilter = %v, %v; want Unschedulable %q", res, st, tc.want)
			}
			if len(w.remaining()) != 6 || len(w.eventNotes()) != 0 {
				t.Fatalf("something was evicted: %v", w.remaining())
			}
			if _, pinned := w.pl.ledger.Commitment(testNS + "/hi"); pinned {
				t.Fatal("gang pinned without a preemption")
			}
			if d := counter(t, metrics.PreemptorGang, metrics.PreemptResultNoCandidate) - before; d != 1 {
				t.Fatalf("no_candidate grew by %v, want 1", d)
			}
		})
	}
}

// Room that exists only across two cliques is never bought with evictions (E7).
func TestPreemptOneDomainOnly(t *testing.T) {
	pods := []*v1.Pod{placedOn(prio(standalone("s-a"), 1), "a2"), placedOn(prio(standalone("s-b"), 1), "b2")}
	var hi []*v1.Pod
	for i := 0; i < 3; i++ {
		hi = append(hi, prio(gangMember("hi-"+string(rune('0'+i)), "hi", 1), 10))
	}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("hi", 3))
	res, st := w.postFilter(hi[0])
	want := "; preemption: evicting lower-priority pods would not free one domain for 3 members"
	if st.Code() != fwk.Unschedulable || st.Message() != want || res != nil {
		t.Fatalf("PostFilter = %v, %v; want %q", res, st, want)
	}
	if len(w.remaining()) != 5 {
		t.Fatalf("something was evicted: %v", w.remaining())
	}
}

// A PodDisruptionBudget protecting one gang steers the choice to an unprotected one, even
// when the protected one would otherwise win (E6).
func TestPreemptPDBRanking(t *testing.T) {
	pods := append(gangOn("prot", 1, "a1", "a2"), gangOn("free", 2, "b1", "b2")...)
	for _, p := range pods[:2] {
		p.Labels["app"] = "prot"
	}
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("prot", 2), podGroup("free", 2), podGroup("hi", 2))
	one := intstr.FromInt32(2)
	if err := w.pdbs.Add(&policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "prot"},
		Spec:       policy.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prot"}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}); err != nil {
		t.Fatal(err)
	}
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	if got, want := w.remaining(), []string{"hi-0", "hi-1", "prot-0", "prot-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// A high-priority standalone pod in a full cluster of gangs evicts a whole gang, never one
// member (E5), and names itself and the node in the events.
func TestPreemptStandaloneEvictsWholeGang(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	pods := gangOn("low", 1, "a1", "a2")
	solo := prio(standalone("solo"), 10)
	w := newPreemptWorld(t, nodes, append(pods, solo), podGroup("low", 2))
	before := counter(t, metrics.PreemptorPod, metrics.PreemptResultPreempted)
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if !st.IsSuccess() || res == nil || res.NominatingInfo == nil {
		t.Fatalf("PostFilter = %v, %v", res, st)
	}
	node := res.NominatingInfo.NominatedNodeName
	if got := w.remaining(); !slices.Equal(got, []string{"solo"}) {
		t.Fatalf("pods left %v, want the whole gang evicted", got)
	}
	want := "Preempted by pod " + testNS + "/solo to place it in domain " + node
	if notes := w.eventNotes(); notes[testNS+"/low-0"] != want || notes[testNS+"/low-1"] != want {
		t.Fatalf("events %v, want %q", notes, want)
	}
	if d := counter(t, metrics.PreemptorPod, metrics.PreemptResultPreempted) - before; d != 1 {
		t.Fatalf("preemption_total{pod,preempted} grew by %v", d)
	}
}

// A standalone pod that some node could take by its resources did not fail for lack of
// room: nothing is evicted and nothing is explained.
func TestPreemptStandaloneNotForRoom(t *testing.T) {
	nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
	pods := []*v1.Pod{placedOn(prio(standalone("low"), 1), "a1")}
	solo := prio(standalone("solo"), 10)
	w := newPreemptWorld(t, nodes, append(pods, solo), nil...)
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
	if st.Code() != fwk.Unschedulable || st.Message() != "" || res != nil {
		t.Fatalf("PostFilter = %v, %v; want a plain Unschedulable", res, st)
	}
	if len(w.remaining()) != 2 {
		t.Fatal("evicted")
	}
}

// A gang whose only obstacle is another gang's hold does not preempt (docs/design.md §19, item 1).
func TestPreemptNotForHolds(t *testing.T) {
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(gangOn("low", 1, "b1", "b2"), hi...)
	other := []*v1.Pod{prio(gangMember("other-0", "other", 1), 20), prio(gangMember("other-1", "other", 1), 20)}
	w := newPreemptWorld(t, twoDomains(), append(pods, other...), podGroup("low", 2), podGroup("hi", 2), podGroup("other", 2))
	w.mustPin(other[0]) // other holds a
	res, st := w.postFilter(hi[0])
	if st.Code() != fwk.Unschedulable || st.Message() != "" || res != nil {
		t.Fatalf("PostFilter = %v, %v; want a plain Unschedulable", res, st)
	}
	if len(w.remaining()) != 6 {
		t.Fatal("evicted")
	}
}

// Preemption off: PostFilter without a pin changes nothing.
func TestPreemptOff(t *testing.T) {
	pods := gangOn("low", 1, "a1", "a2", "b1", "b2")
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	w := newPreemptWorld(t, twoDomains(), append(pods, hi...), podGroup("low", 4), podGroup("hi", 2))
	w.pl.args.Preemption = false
	res, st := w.postFilter(hi[0])
	if st.Code() != fwk.Unschedulable || st.Message() != "" || res != nil || len(w.remaining()) != 6 {
		t.Fatalf("PostFilter = %v, %v", res, st)
	}
}

// filteredOut is the node statuses of a standalone pod that Filter rejected on every node
// for resources (Unschedulable, which preemption may resolve).
func filteredOut() fwk.NodeToStatusReader {
	return framework.NewNodeToStatus(map[string]*fwk.Status{}, fwk.NewStatus(fwk.Unschedulable, "Insufficient nvidia.com/gpu"))
}

// A forming lower-priority gang holding a domain is a victim like any other: its waiting
// member is rejected (not deleted), its hold is released in one unwind, and the preemptor
// pins the domain; a mid-priority gang elsewhere is untouched (docs/design.md §19, item 2).
func TestPreemptLowerPriorityHolder(t *testing.T) {
	w, _, _, _ := lowerHolderPreempted(t)
	if c, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || c.Domain != "a" {
		t.Fatalf("hi pin %+v %v, want a", c, ok)
	}
	if _, ok := w.pl.ledger.Commitment(testNS + "/form"); ok {
		t.Fatal("the holder's commitment survived")
	}
	// The waiting member is rejected, not deleted; nothing else is touched.
	if got, want := w.remaining(), []string{"form-0", "form-1", "hi-0", "hi-1", "mid-0", "mid-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
	if notes := w.eventNotes(); notes[testNS+"/form-0"] != "Preempted by gang "+testNS+"/hi to place it in domain a" {
		t.Fatalf("events %v", notes)
	}
}

// A domain held by a gang of equal or higher priority is never a candidate.
func TestPreemptHigherPriorityHolderKept(t *testing.T) {
	form := []*v1.Pod{prio(gangMember("form-0", "form", 1), 10), prio(gangMember("form-1", "form", 1), 10)}
	low := gangOn("low", 5, "b1", "b2")
	hi := []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	pods := append(append(append([]*v1.Pod{}, form...), low...), hi...)
	w := newPreemptWorld(t, twoDomains(), pods, podGroup("form", 2), podGroup("low", 2), podGroup("hi", 2))
	c := w.mustPin(form[0])
	if st := c.reserveOn("a1"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(form-0) = %v, want Wait", st)
	}
	waiter := w.h.register(form[0])
	w.resnap(assumed(form[0], "a1"))
	res, st := w.postFilter(hi[0])
	assertNominated(t, res, st, "b1", "b2")
	if got := waiter.now(); got != "" {
		t.Fatalf("the equal-priority holder's member got verdict %q", got)
	}
	if got, want := w.remaining(), []string{"form-0", "form-1", "hi-0", "hi-1"}; !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v", got, want)
	}
}

// Bad input never panics: a preemptor without nodes, pods without requests or priority,
// a nil status reader.
func TestPreemptDegenerateInputs(t *testing.T) {
	w := newPreemptWorld(t, nil, []*v1.Pod{standalone("solo")})
	res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), standalone("solo"), nil)
	if st.Code() != fwk.Unschedulable || res != nil {
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
