package gangpack

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/pace"
)

func bindsInFlight(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(metrics.BindsInFlight)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The bind window's count through the plugin's extension points: a member waiting at Permit
// counts until the informer shows its nominatedNodeName, the members count again in Bind,
// and PostBind ends them; the gauge follows.
func TestBindWindowCountsThroughThePlugin(t *testing.T) {
	metrics.Register()
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1)}
	pods := members("g", 2)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 2))
	w.useNodeLister()
	w.pl.nominates = true
	count := func(step string, want int) {
		t.Helper()
		if st := w.pl.pace.State(); st.InFlight != want {
			t.Fatalf("%s: %d in flight, want %d", step, st.InFlight, want)
		}
		if g := bindsInFlight(t); g != float64(want) {
			t.Fatalf("%s: ome_scheduler_binds_in_flight = %v, want %d", step, g, want)
		}
	}
	c0 := w.mustPin(pods[0])
	if st := c0.reserveOn("a-0"); !st.IsWait() {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	count("g-0 waits, its nominatedNodeName PATCH pending", 1)
	nominated := pods[0].DeepCopy()
	nominated.Status.NominatedNodeName = "a-0"
	w.pl.memberEvent(pods[0], nominated)
	count("g-0's nomination seen", 0)
	w.resnap(assumed(pods[0], "a-0"))
	c1 := w.mustPin(pods[1])
	if st := c1.reserveOn("a-1"); !st.IsSuccess() {
		t.Fatalf("Permit(g-1) = %v, want success (the gang is complete)", st)
	}
	count("g-1 completes the gang", 1)
	w.bindAll(pods, map[string]fwk.CycleState{"g-0": c0.cs, "g-1": c1.cs}, map[string]string{"g-0": "a-0", "g-1": "a-1"})
	count("both in Bind", 2)
	w.pl.PostBind(w.ctx, c0.cs, assumed(pods[0], "a-0"), "a-0")
	w.pl.Unreserve(w.ctx, c1.cs, pods[1], "a-1")
	count("one bound, one failed", 0)
	if st := w.pl.pace.State(); st.Rate != 1 {
		t.Fatalf("rate %v, want 1 bind in the last second", st.Rate)
	}
}

// At the limit, a cycle that starts new work (a standalone pod) waits until a bind ends; a
// member of a pinned gang does not wait.
func TestBindWindowHoldsNewWorkOnly(t *testing.T) {
	metrics.Register()
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1), testNode("b-0", "b", 1)}
	pods := members("g", 2)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 2))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	w.pl.pace = pace.New(time.Second, 0, clk)
	w.pl.nominates = false
	c0 := w.mustPin(pods[0])
	if st := c0.reserveOn("a-0"); !st.IsWait() {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	for i := 0; i < pace.Floor; i++ { // binds of other pods fill the window
		w.pl.pace.Started(uidOf(i))
	}
	// g is pinned: its second member is planned at once.
	w.resnap(assumed(pods[0], "a-0"))
	if _, st := w.preFilter(pods[1]); !st.IsSuccess() {
		t.Fatalf("PreFilter(g-1) = %v, want success without waiting", st)
	}
	before, _ := testutil.GetCounterMetricValue(metrics.BindWindowWaitSeconds)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = w.preFilter(standalone("solo"))
	}()
	for !clk.HasWaiters() {
		select {
		case <-done:
			t.Fatal("PreFilter(standalone) returned with the window full")
		default:
			time.Sleep(time.Millisecond)
		}
	}
	clk.Step(250 * time.Millisecond)
	w.pl.PostBind(w.ctx, framework.NewCycleState(), standalone("other"), "b-0") // a pod never counted drains nothing
	select {
	case <-done:
		t.Fatal("PreFilter(standalone) returned when a pod never counted was bound")
	case <-time.After(50 * time.Millisecond):
	}
	w.pl.pace.Finished(uidOf(0), true)
	<-done
	after, _ := testutil.GetCounterMetricValue(metrics.BindWindowWaitSeconds)
	if after-before != 0.25 {
		t.Fatalf("ome_scheduler_bind_window_wait_seconds_total grew by %v, want 0.25", after-before)
	}
}

func uidOf(i int) types.UID {
	return types.UID("bind-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
}
