package gangpack

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// Resumed pins among other gangs: lower and equal priorities wait, a higher priority takes
// the room only by preemption; the PodGroup changing after the nomination, and a replica that
// already schedules, resume nothing.

// onlyCliqueA drops clique b: first's clique is the only one.
func onlyCliqueA(nodes []*v1.Node, _ []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
	return slices.DeleteFunc(nodes, func(n *v1.Node) bool { return strings.HasPrefix(n.Name, "b") })
}

func pinCounter(t *testing.T, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.PinTotal.WithLabelValues(result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The resumed pin is counted and logged with source nominated; a gang of lower priority,
// planned first, finds the only clique reserved and waits.
func TestResumeLowerPriorityWaits(t *testing.T) {
	metrics.Register()
	before := pinCounter(t, metrics.PinNominated)
	w, _, second := resumeWorld(t, func(nodes []*v1.Node, pods []*v1.Pod, pgs []*schedv1alpha1.PodGroup) []*v1.Node {
		for i := 4; i < 8; i++ {
			pods[i] = prio(pods[i], -5)
		}
		return onlyCliqueA(nodes, pods, pgs)
	})
	logs := w.captureLogs()
	_, st := w.preFilter(second[0])
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "every fitting domain is reserved for a forming gang") {
		t.Fatalf("PreFilter(second-0) = %v, want a wait for reserved room", st)
	}
	if got := pinCounter(t, metrics.PinNominated) - before; got != 1 {
		t.Fatalf("gang_pin_total{nominated} grew by %v, want 1", got)
	}
	line := logLine(logs(), "gangpack.pinGang.result")
	if !strings.Contains(line, `gang="ns/first"`) || !strings.Contains(line, `source="nominated"`) || !strings.Contains(line, `domain="a"`) {
		t.Fatalf("pinGang.result log %q, want first's nominated pin on a", line)
	}
}

// A PodGroup changed after its members were nominated (here the topology key, to a zone
// every nominated node shares, and minMember) is not resumed.
func TestResumePodGroupChangedSinceNomination(t *testing.T) {
	w, _, second := resumeWorld(t, func(nodes []*v1.Node, _ []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
		for _, n := range nodes {
			n.Labels["example.com/zone"] = "z"
		}
		return nodes
	})
	pg := podGroup("first", 3)
	pg.Annotations = map[string]string{"ome.io/topology-key": "example.com/zone"}
	if err := w.pgs.Update(pg); err != nil {
		t.Fatal(err)
	}
	logs := w.captureLogs()
	w.preFilter(second[0])
	if pin, ok := w.pl.ledger.Commitment(testNS + "/first"); ok {
		t.Fatalf("first resumed %+v under a changed PodGroup", pin)
	}
	if line := logLine(logs(), "gangpack.pinGang.nominated_dropped"); !strings.Contains(line, `reason="podgroup_changed"`) {
		t.Fatalf("nominated_dropped log %q, want reason podgroup_changed", line)
	}
}

// A replica that has scheduled already records no nominations: the ones it sees are its own.
func TestResumeNotOnActiveLeader(t *testing.T) {
	w, _, second := resumeWorld(t, nil)
	w.preFilter(second[0]) // the new leader is active: first resumed
	if _, ok := w.pl.ledger.Commitment(testNS + "/first"); !ok {
		t.Fatal("first not resumed")
	}
	// A gang of the active leader that was unwound keeps stale nominations for a moment.
	w.pl.ledger.Abandon(w.pl.logger, testNS+"/first", placement.AnyID, gang.CausePodGroupMissing)
	third := nominated(gangMember("third-0", "first", 1), "a1")
	w.addPod(third)
	w.pl.memberEvent(nil, third)
	w.preFilter(second[1])
	if pin, ok := w.pl.ledger.Commitment(testNS + "/first"); ok {
		t.Fatalf("the active leader resumed its own unwound gang: %+v", pin)
	}
}

// preemptResumeWorld is resumeWorld with preemption on and only clique a, after the
// failover, with a high-priority gang hi of 5 (the whole clique).
func preemptResumeWorld(t *testing.T) *preemptWorld {
	t.Helper()
	w, first, second := resumeWorld(t, onlyCliqueA)
	hi := members("hi", 5)
	for i := range hi {
		hi[i] = prio(hi[i], 10)
	}
	args := testArgs()
	pw := newPreemptWorldArgs(t, args, w.nodes, append(append(slices.Clone(first), second...), hi...),
		podGroup("first", 4), podGroup("second", 4), podGroup("hi", 5))
	pw.world.failover()
	pw.pl.evaluator.UsePDBs(policylisters.NewPodDisruptionBudgetLister(pw.pdbs))
	return pw
}

// A resumed hold is displaced only by the preemption rules, like any hold: while none of its
// members is placed, a hold alone is no reason to preempt (the higher-priority gang waits for
// it to end); once a member waits at Permit in the room the higher-priority gang needs, a
// gang of equal priority still leaves it alone and the higher-priority gang preempts it.
func TestResumePreemption(t *testing.T) {
	w := preemptResumeWorld(t)
	first0, second0, hi0 := w.pods[0], w.pods[4], w.pods[8]
	if res, st := w.postFilter(hi0); !clears(res) || st.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter(hi-0) = %v, %v against a memberless hold; want a plain Unschedulable", res, st)
	}
	keeps := func(when string) {
		t.Helper()
		if pin, ok := w.pl.ledger.Commitment(testNS + "/first"); !ok || !pin.Resumed {
			t.Fatalf("%s: first lost its resumed pin: %+v %v", when, pin, ok)
		}
	}
	keeps("hi without victims")
	c := w.mustPin(first0)
	if st := c.reserveOn("a3"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(first-0) = %v, want Wait", st)
	}
	waiter := w.h.register(first0)
	w.resnap(assumed(first0, "a3"))
	if res, _ := w.postFilter(second0); res != nil && res.NominatingInfo != nil && res.NominatingInfo.NominatedNodeName != "" {
		t.Fatalf("second (equal priority) preempted: %v", res)
	}
	keeps("second of equal priority")
	res, st := w.postFilter(hi0)
	assertNominated(t, res, st, "a1", "a2", "a3", "a4", "a5")
	if got := waiter.await(testWait); got == "" || got == "allowed" {
		t.Fatalf("first-0 verdict %q, want a rejection", got)
	}
	if _, ok := w.pl.ledger.Commitment(testNS + "/first"); ok {
		t.Fatal("first kept its pin against a higher-priority preemptor")
	}
	if pin, ok := w.pl.ledger.Commitment(testNS + "/hi"); !ok || pin.Domain != "a" {
		t.Fatalf("hi pin %+v %v, want a", pin, ok)
	}
}

// A PodGroup deleted after the nomination: nothing to resume.
func TestResumePodGroupDeleted(t *testing.T) {
	w, _, second := resumeWorld(t, nil)
	if err := w.pgs.Delete(podGroup("first", 4)); err != nil {
		t.Fatal(err)
	}
	logs := w.captureLogs()
	w.preFilter(second[0])
	if pin, ok := w.pl.ledger.Commitment(testNS + "/first"); ok {
		t.Fatalf("first resumed %+v without its PodGroup", pin)
	}
	if line := logLine(logs(), "gangpack.pinGang.nominated_dropped"); !strings.Contains(line, `reason="podgroup_missing"`) {
		t.Fatalf("nominated_dropped log %q, want reason podgroup_missing", line)
	}
}
