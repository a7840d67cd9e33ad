package gangpack

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/pace"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// pacedWorld is a world whose pacer runs on a fake clock, with kube-scheduler's
// nominatedNodeName PATCH on (NominatedNodeNameForExpectation).
func pacedWorld(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) (*world, *clocktesting.FakeClock) {
	t.Helper()
	metrics.Register()
	w := newWorld(t, nil, nodes, pods, pgs...)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	w.pl.pace = pace.New(time.Second, 0, clk)
	w.pl.nominates = true
	return w, clk
}

// nominate shows p's nominatedNodeName in the pod informer, as kube-scheduler's PATCH does.
func (w *world) nominate(p *v1.Pod, node string) {
	w.t.Helper()
	old, ok, _ := w.podInf.GetIndexer().Get(p)
	q := p.DeepCopy()
	q.Status.NominatedNodeName = node
	if !ok {
		w.addPod(q)
		w.pl.memberEvent(nil, q)
		return
	}
	w.updatePod(q)
	w.pl.memberEvent(old.(*v1.Pod), q)
}

// inFlight fails unless the pacer counts want pods.
func (w *world) inFlight(step string, want int) {
	w.t.Helper()
	if st := w.pl.pace.State(); st.InFlight != want {
		w.t.Fatalf("%s: %d in flight, want %d", step, st.InFlight, want)
	}
}

// preFilterBlocks starts PreFilter(p) and fails unless it waits on the fake clock; the
// returned channel yields its cycle and status when it ends.
func (w *world) preFilterBlocks(clk *clocktesting.FakeClock, p *v1.Pod) <-chan preFiltered {
	w.t.Helper()
	done := make(chan preFiltered, 1)
	go func() {
		c, st := w.preFilter(p)
		done <- preFiltered{c, st}
	}()
	deadline := time.Now().Add(testWait)
	for !clk.HasWaiters() {
		select {
		case <-done:
			w.t.Fatalf("PreFilter(%s) returned at once with the window full", p.Name)
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("PreFilter(%s) neither waited nor returned", p.Name)
		}
		time.Sleep(time.Millisecond)
	}
	return done
}

type preFiltered struct {
	c  *cycle
	st *fwk.Status
}

// M2: 300 standalone pods admitted at Permit whose nominatedNodeName PATCH landed are in
// PreBind (waiting for volumes, say) and do not count; a plain pod's PreFilter does not
// wait. In Bind a pod counts again. With the gate off no PATCH comes and Permit uncounts.
func TestPodsInPreBindAreNotInFlight(t *testing.T) {
	w, _ := pacedWorld(t, []*v1.Node{testNode("n", "a", 8)}, nil)
	var pods []*v1.Pod
	for i := 0; i < 300; i++ {
		p := standalone(fmt.Sprintf("vol-%d", i))
		w.addPod(p)
		cs := framework.NewCycleState()
		if st := w.pl.Reserve(w.ctx, cs, p, "n"); !st.IsSuccess() {
			t.Fatalf("Reserve(%s) = %v", p.Name, st)
		}
		if st, _ := w.pl.Permit(w.ctx, cs, p, "n"); !st.IsSuccess() {
			t.Fatalf("Permit(%s) = %v", p.Name, st)
		}
		pods = append(pods, p)
	}
	w.inFlight("300 admitted, their nominatedNodeName PATCH pending", 300)
	for _, p := range pods {
		w.nominate(p, "n")
	}
	w.inFlight("300 in PreBind (their PATCH seen)", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = w.preFilter(standalone("plain"))
	}()
	select {
	case <-done:
	case <-time.After(testWait):
		t.Fatal("PreFilter(plain) waited with 300 pods in PreBind and none waiting on the API")
	}
	w.pl.Bind(w.ctx, framework.NewCycleState(), pods[0], "n")
	w.inFlight("one of them in Bind", 1)

	w.pl.nominates = false
	p := standalone("gate-off")
	cs := framework.NewCycleState()
	w.pl.Reserve(w.ctx, cs, p, "n")
	w.inFlight("gate off: reserved", 2)
	w.pl.Permit(w.ctx, cs, p, "n")
	w.inFlight("gate off: admitted, no PATCH comes before PreBind", 1)
}

// L4: a member whose nominatedNodeName reached the informer between its pop and its Permit
// (kube-scheduler's PATCH then changes nothing and no event follows) is not counted as
// patching for its whole Permit wait: Permit reads the informer's pod, not the popped copy.
func TestNominationSeenBeforePermitIsNotPending(t *testing.T) {
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1)}
	pods := members("g", 2)
	w, _ := pacedWorld(t, nodes, pods, podGroup("g", 2))
	c := w.mustPin(pods[0])
	ni, _ := w.h.snapshot.NodeInfos().Get("a-0")
	if st := w.pl.Filter(w.ctx, c.cs, pods[0], ni); !st.IsSuccess() {
		t.Fatalf("Filter = %v", st)
	}
	w.pl.Reserve(w.ctx, c.cs, pods[0], "a-0")
	w.nominate(pods[0], "a-0") // the old nominatedNodeName arrives; the popped copy has none
	w.inFlight("g-0 reserved, nomination seen", 1)
	if st, _ := w.pl.Permit(w.ctx, c.cs, pods[0], "a-0"); !st.IsWait() {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.inFlight("g-0 waits on its sibling, its node already nominated", 0)
}

// L1: a member of a committed gang (no longer forming) is new work and waits for the window
// like a standalone pod; only members of forming gangs pass.
func TestCommittedGangMembersArePaced(t *testing.T) {
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1), testNode("a-2", "a", 1)}
	pods := members("g", 3)
	w, clk := pacedWorld(t, nodes, pods, podGroup("g", 1))
	c0 := w.mustPin(pods[0])
	if st := c0.reserveOn("a-0"); !st.IsSuccess() {
		t.Fatalf("Permit(g-0) = %v, want success (minMember 1)", st)
	}
	if c, ok := w.pl.ledger.Commitment(testNS + "/g"); !ok || c.Forming() {
		t.Fatalf("gang g: pinned %v, commitment %+v; want committed", ok, c)
	}
	for i := 0; i < pace.Floor; i++ {
		w.pl.pace.Started(uidOf(i))
	}
	w.resnap(assumed(pods[0], "a-0"))
	done := w.preFilterBlocks(clk, pods[1])
	w.pl.pace.Finished(uidOf(0), true) // g-0 counts too (its PATCH pending)
	w.pl.pace.Finished(uidOf(1), true)
	if r := <-done; !r.st.IsSuccess() {
		t.Fatalf("PreFilter(g-1) after the wait = %v, want success", r.st)
	}
}

// L3: a cycle that waited goes on with the nodes the wait did not change only: its only
// candidate cordoned during the wait is not offered (the cycle's snapshot still shows it
// schedulable); of two nodes, the unchanged one is kept.
func TestWaitedCycleLeavesNodesChangedMeanwhile(t *testing.T) {
	nodes := []*v1.Node{testNode("n0", "", 1), testNode("n1", "", 1)}
	for _, n := range nodes {
		n.ResourceVersion = "1"
	}
	w, clk := pacedWorld(t, nodes, nil)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		_ = idx.Add(n)
	}
	w.pl.nodes = corelisters.NewNodeLister(idx)
	w.nodes = nodes[:1]
	w.resnap()
	for i := 0; i < pace.Floor; i++ {
		w.pl.pace.Started(uidOf(i))
	}
	cordon := func(n *v1.Node, rv string) {
		c := n.DeepCopy()
		c.Spec.Unschedulable, c.ResourceVersion = true, rv
		if err := idx.Update(c); err != nil {
			t.Fatal(err)
		}
	}
	done := w.preFilterBlocks(clk, standalone("solo"))
	cordon(nodes[0], "2")
	clk.Step(pace.MaxWaitWindows * time.Second)
	r := <-done
	if r.st.Code() != fwk.Unschedulable || r.st.Message() != msg.NodesChanged || r.c.res.AllNodes() || r.c.res.NodeNames.Len() != 0 {
		t.Fatalf("PreFilter after its only node was cordoned during the wait: %v, result %+v; want %q and no node", r.st, r.c.res, msg.NodesChanged)
	}
	w.nodes = nodes
	w.resnap()
	done = w.preFilterBlocks(clk, standalone("duo"))
	cordon(nodes[0], "3")
	clk.Step(pace.MaxWaitWindows * time.Second)
	r = <-done
	if !r.st.IsSuccess() || r.c.res.AllNodes() || !r.c.res.NodeNames.Equal(sets.New("n1")) {
		t.Fatalf("PreFilter after n0 was cordoned during the wait: %v, result %+v; want success on n1 only", r.st, r.c.res)
	}
}

// L2: the ceiling comes from the framework's client configuration (KubeConfig().QPS); fed
// 1,000 binds a second the limit is max(256, min(1,000, QPS × 1 s)): the floor for the
// chart's qps 200, 400 for qps 400.
func TestBindWindowCeilingFromKubeConfig(t *testing.T) {
	for _, c := range []struct {
		qps  float32
		want int
	}{{200, pace.Floor}, {400, 400}} {
		w := newWorld(t, nil, nil, nil)
		ml, err := gang.NewMembers(w.h.factory.Core().V1().Pods())
		if err != nil {
			t.Fatal(err)
		}
		pl, err := newPlugin(w.ctx, testArgs(), &qpsHandle{w.h, c.qps}, ml, nil, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			pl.pace.Started(uidOf(i))
			pl.pace.Finished(uidOf(i), true)
		}
		if st := pl.pace.State(); st.Rate != 1000 || st.Limit != c.want {
			t.Errorf("qps %v, 1,000 binds in the last second: %+v, want rate 1000, limit %d", c.qps, st, c.want)
		}
	}
}

type qpsHandle struct {
	*fakeHandle
	qps float32
}

func (h *qpsHandle) KubeConfig() *restclient.Config { return &restclient.Config{QPS: h.qps} }
