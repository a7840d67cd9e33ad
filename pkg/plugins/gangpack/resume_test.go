package gangpack

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Resuming a previous leader's forming gangs from their members' nominations (resume.go,
// docs/design.md §12).

// failover replaces the plugin with a fresh instance over the same API state, as a standby
// that becomes leader: its pod informer delivers every pod (with its nominatedNodeName) before
// its first PreFilter. The snapshot holds only bound pods: the old leader's assumed ones died
// with it.
func (w *world) failover() {
	w.t.Helper()
	ml, err := gang.NewMembers(w.h.factory.Core().V1().Pods())
	if err != nil {
		w.t.Fatal(err)
	}
	w.h.waiting = map[types.UID]*fakeWaiter{}
	w.pl, err = newPlugin(w.ctx, w.pl.args, w.h, ml, nil, w.ledgerOptions())
	if err != nil {
		w.t.Fatal(err)
	}
	w.pl.podGroups = &podGroupReader{}
	w.pl.podGroups.cur.Store(&pgInformer{lister: pglisters.NewPodGroupLister(w.pgs), informer: nil})
	for _, p := range w.pods {
		w.pl.memberEvent(nil, p)
	}
	w.resnap()
}

// nominated returns a copy of p nominated to node.
func nominated(p *v1.Pod, node string) *v1.Pod {
	q := p.DeepCopy()
	q.Status.NominatedNodeName = node
	return q
}

// gated returns a copy of p with a scheduling gate.
func gated(p *v1.Pod) *v1.Pod {
	q := p.DeepCopy()
	q.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/gate"}}
	return q
}

// resumeWorld: clique a (a1-a5) has room for 5 members of one GPU, clique b (b1-b6) for 6;
// gang first has three members the old leader had waiting at Permit on a3-a5 and a fourth
// gated; gang second (equal priority) is new. Best fit alone would put second into a.
// change edits the nodes, pods (nil: deleted) and PodGroups before the new leader starts.
func resumeWorld(t *testing.T, change func(nodes []*v1.Node, pods []*v1.Pod, pgs []*schedv1alpha1.PodGroup) []*v1.Node) (*world, []*v1.Pod, []*v1.Pod) {
	t.Helper()
	var nodes []*v1.Node
	for i := 1; i <= 5; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
	}
	for i := 1; i <= 6; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("b%d", i), "b", 1))
	}
	first := []*v1.Pod{nominated(gangMember("first-0", "first", 1), "a3"), nominated(gangMember("first-1", "first", 1), "a4"),
		nominated(gangMember("first-2", "first", 1), "a5"), gated(gangMember("first-3", "first", 1))}
	second := []*v1.Pod{gangMember("second-0", "second", 1), gangMember("second-1", "second", 1),
		gangMember("second-2", "second", 1), gangMember("second-3", "second", 1)}
	pgs := []*schedv1alpha1.PodGroup{podGroup("first", 4), podGroup("second", 4)}
	pods := append(slices.Clone(first), second...)
	if change != nil {
		nodes = change(nodes, pods, pgs)
	}
	var live []*v1.Pod
	for _, p := range pods {
		if p != nil {
			live = append(live, p)
		}
	}
	w := newWorld(t, nil, nodes, live, pgs...)
	w.failover()
	return w, pods[:4], pods[4:]
}

func reservedNodes(w *world, key string) []string {
	c, ok := w.pl.ledger.Commitment(testNS + "/" + key)
	if !ok {
		return nil
	}
	return slices.Sorted(maps.Keys(c.Reserved))
}

// The new leader pins the nominated clique before any gang plans: second, planned first,
// goes to b; first keeps a3-a5 and reserves a1 for its gated member, and its members land
// on their nominated nodes while the reservation keeps the other nominated nodes.
func TestResumeNominatedBeforeOthers(t *testing.T) {
	w, first, second := resumeWorld(t, nil)
	c := w.mustPin(second[0])
	if pin, _ := w.pl.ledger.Commitment(testNS + "/second"); pin.Domain != "b" {
		t.Fatalf("second pinned %q, want b (a is first's)", pin.Domain)
	}
	if c.res.NodeNames.Has("a3") {
		t.Fatalf("second's candidates %v include first's nodes", c.res.NodeNames)
	}
	pin, ok := w.pl.ledger.Commitment(testNS + "/first")
	if !ok || pin.Domain != "a" || !pin.Resumed || pin.Remaining != 4 {
		t.Fatalf("first's pin %+v %v, want a resumed forming pin on a for 4", pin, ok)
	}
	if got := reservedNodes(w, "first"); !slices.Equal(got, []string{"a1", "a3", "a4", "a5"}) {
		t.Fatalf("first reserves %v, want a1 a3 a4 a5", got)
	}
	// first-1 lands on its nominated node; the reservation keeps first-0's and first-2's
	// nodes (packing alone would move it to a1-a3).
	fc := w.mustPin(first[1])
	if st := fc.reserveOn("a4"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(first-1) = %v, want Wait", st)
	}
	w.resnap(assumed(first[1], "a4"))
	w.mustPin(first[0])
	if got := reservedNodes(w, "first"); !slices.Equal(got, []string{"a1", "a3", "a5"}) {
		t.Fatalf("first reserves %v after first-1, want a1 a3 a5", got)
	}
}

// Stale nominations are not resumed: the gang plans as any unpinned gang does, and second,
// planned first, takes clique a by best fit when a still fits it best.
func TestResumeStaleNominations(t *testing.T) {
	relabel := func(nodes []*v1.Node, name, domain string) {
		for _, n := range nodes {
			if n.Name == name {
				if domain == "" {
					delete(n.Labels, testKey)
				} else {
					n.Labels[testKey] = domain
				}
			}
		}
	}
	full := func(node string) *v1.Pod {
		p := standalone("hog-" + node)
		p.Spec.NodeName = node
		return p
	}
	cases := []struct {
		name, reason string
		change       func(nodes []*v1.Node, pods []*v1.Pod, pgs []*schedv1alpha1.PodGroup) []*v1.Node
	}{
		{"node gone", "node_gone", func(nodes []*v1.Node, _ []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			return slices.DeleteFunc(nodes, func(n *v1.Node) bool { return n.Name == "a4" })
		}},
		{"node lost the topology key", "relabelled", func(nodes []*v1.Node, _ []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			relabel(nodes, "a4", "")
			return nodes
		}},
		{"node relabelled to another domain", "split", func(nodes []*v1.Node, _ []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			relabel(nodes, "a5", "b")
			return nodes
		}},
		{"nominated nodes in two domains", "split", func(nodes []*v1.Node, pods []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			pods[2] = nominated(pods[2], "b1")
			return nodes
		}},
		{"member deleted", "members_missing", func(nodes []*v1.Node, pods []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			pods[1] = nil
			return nodes
		}},
		{"topology key changed", "split", func(nodes []*v1.Node, _ []*v1.Pod, pgs []*schedv1alpha1.PodGroup) []*v1.Node {
			pgs[0].Annotations = map[string]string{"ome.io/topology-key": "example.com/rack"}
			for i, n := range nodes { // racks cut across the cliques
				n.Labels["example.com/rack"] = fmt.Sprintf("r%d", i%2)
			}
			return nodes
		}},
		{"nominated node full", "no_room", func(nodes []*v1.Node, pods []*v1.Pod, _ []*schedv1alpha1.PodGroup) []*v1.Node {
			pods[4] = full("a3") // the hog replaces second-0, which is planned below anyway
			return nodes
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, first, second := resumeWorld(t, tc.change)
			if second[0] == nil || second[0].Spec.NodeName != "" {
				second[0] = gangMember("second-x", "second", 1)
				w.addPod(second[0])
			}
			logs := w.captureLogs()
			w.preFilter(second[0])
			if pin, ok := w.pl.ledger.Commitment(testNS + "/first"); ok {
				t.Fatalf("first resumed %+v from stale nominations", pin)
			}
			if line := logLine(logs(), "gangpack.pinGang.nominated_dropped"); !strings.Contains(line, `gang="ns/first"`) ||
				!strings.Contains(line, `reason="`+tc.reason+`"`) {
				t.Fatalf("nominated_dropped log %q, want gang ns/first, reason %s", line, tc.reason)
			}
			// first re-plans as today: its first member gets a pin of its own choosing.
			if _, st := w.preFilter(first[0]); st.IsSuccess() {
				if pin, _ := w.pl.ledger.Commitment(testNS + "/first"); pin.Resumed {
					t.Fatalf("first's new pin %+v is marked resumed", pin)
				}
			}
		})
	}
}

// captureLogs makes the world's cycles log (at V(4)) into a buffer and returns its reader.
func (w *world) captureLogs() func() string {
	logger := ktesting.NewLogger(w.t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	w.ctx = klog.NewContext(w.ctx, logger)
	return func() string { return logger.GetSink().(ktesting.Underlier).GetBuffer().String() }
}

// logLine returns the first log line with the key ("" when none).
func logLine(logs, key string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, key) {
			return l
		}
	}
	return ""
}
