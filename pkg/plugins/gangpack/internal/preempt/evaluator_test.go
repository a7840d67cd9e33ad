package preempt

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The Evaluator against a fake Interface, as kube-scheduler's framework/preemption tests its
// own Evaluator: a snapshot of nodes and pods, the plugin's side faked, and the result read
// from PostFilter's answer, the evictions and the calls into the plugin.

// fakeHandle is the part of fwk.Handle the Evaluator uses.
type fakeHandle struct {
	fwk.Handle
	snap *schedcache.Snapshot
	cs   *clientsetfake.Clientset
}

func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister { return h.snap }
func (h *fakeHandle) GetWaitingPod(types.UID) fwk.WaitingPod { return nil }
func (h *fakeHandle) ClientSet() clientset.Interface         { return h.cs }
func (h *fakeHandle) EventRecorder() events.EventRecorder    { return nil }

// fakeIface is the plugin's side: the gang preemptor's shortfall is given, and the calls
// into the plugin are recorded.
type fakeIface struct {
	shortfall *gang.Shortfall
	released  []string
	holds     []string // the held domains
	woken     []types.UID
}

func (f *fakeIface) UnitOf() func(*v1.Pod) string                    { return nil }
func (f *fakeIface) Pins() []placement.Commitment                    { return nil }
func (f *fakeIface) Go(run func())                                   { run() }
func (f *fakeIface) Release(_ klog.Logger, gangKey string)           { f.released = append(f.released, gangKey) }
func (f *fakeIface) WakeBlockedAfter(uid types.UID, _ time.Duration) { f.woken = append(f.woken, uid) }

func (f *fakeIface) Shortfall(klog.Logger, *v1.Pod, []fwk.NodeInfo) (*gang.Shortfall, *gang.RoomComing) {
	return f.shortfall, nil
}

func (f *fakeIface) Hold(_ klog.Logger, _ *gang.Shortfall, _ []topology.Node, domain string, _ []*v1.Pod) {
	f.holds = append(f.holds, domain)
}

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rackNode is a node of rack r0 with one GPU.
func rackNode(name string) *v1.Node {
	n := testNode(name)
	n.Labels = map[string]string{"rack": "r0"}
	return n
}

// pendingPod is an unbound pod of priority prio requesting one GPU, a member of gangName
// unless that is empty.
func pendingPod(name, gangName string, prio int32) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Priority(prio).
		Req(map[v1.ResourceName]string{"nvidia.com/gpu": "1"}).Obj()
	if gangName != "" {
		p.Labels = map[string]string{gang.Label: gangName}
	}
	return p
}

// evalEnv is one case's world: the Evaluator, the fake plugin and the API client.
type evalEnv struct {
	e     *Evaluator
	iface *fakeIface
	cs    *clientsetfake.Clientset
	pods  map[string]*v1.Pod // every pod by name, as the pod informer holds it
}

func newEvalEnv(t *testing.T, nodes []*v1.Node, bound, pending []*v1.Pod, sf *gang.Shortfall) *evalEnv {
	t.Helper()
	all := append(slices.Clone(bound), pending...)
	members, err := gang.NewMembersOf(all)
	if err != nil {
		t.Fatal(err)
	}
	env := &evalEnv{iface: &fakeIface{shortfall: sf}, pods: map[string]*v1.Pod{}}
	for _, p := range all {
		env.pods[p.Name] = p
	}
	env.cs = clientsetfake.NewClientset()
	for _, p := range all {
		if err := env.cs.Tracker().Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHandle{snap: schedcache.NewSnapshot(bound, nodes), cs: env.cs}
	env.e = New(context.Background(), h, members, nil, env.iface, func() time.Time { return testNow })
	return env
}

// deleted lists the pods the Evaluator deleted through the API, sorted.
func (env *evalEnv) deleted() []string {
	var out []string
	for _, a := range env.cs.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// rackShortfall is a two-member gang of one-GPU members that lacks room in rack r0 of
// nodes n0 and n1 (both full).
func rackShortfall(gangName string) *gang.Shortfall {
	one := topology.Resources{"nvidia.com/gpu": 1}
	n := func(name string) topology.Node {
		return topology.Node{Name: name, Domain: "r0", Free: topology.Resources{}, FreePods: 100, Fits: []bool{true}}
	}
	return &gang.Shortfall{
		Info:  gang.Info{Key: "ns/" + gangName, Namespace: "ns", Name: gangName, MinMember: 2, TopologyKey: "rack"},
		Gang:  topology.Gang{Shapes: []topology.Resources{one}, Siblings: []int{1}, Need: 2},
		Nodes: []topology.Node{n("n0"), n("n1")},
	}
}

func TestEvaluatorPreempt(t *testing.T) {
	nodes := []*v1.Node{rackNode("n0"), rackNode("n1")}
	lowGang := []*v1.Pod{lowMember("low-0", "low", "n0"), lowMember("low-1", "low", "n1")}
	never := pendingPod("never", "", 100)
	policy := v1.PreemptNever
	never.Spec.PreemptionPolicy = &policy
	guard := st.MakePod().Namespace("ns").Name("guard").UID("uid-guard").Node("n0").Priority(200).
		Req(map[v1.ResourceName]string{"nvidia.com/gpu": "1"}).Obj()
	guard1 := guard.DeepCopy()
	guard1.Name, guard1.UID, guard1.Spec.NodeName = "guard1", "uid-guard1", "n1"

	cases := []struct {
		name      string
		bound     []*v1.Pod
		preemptor *v1.Pod
		others    []*v1.Pod // other pending pods the informer holds
		shortfall *gang.Shortfall
		wantNode  string
		wantMsg   string // a part of the status message ("" for Success)
		victims   []string
		released  []string
		holds     []string
		then      func(t *testing.T, env *evalEnv, preemptor *v1.Pod)
	}{
		{
			name: "a standalone preemptor evicts a whole lower-priority gang", bound: lowGang,
			preemptor: pendingPod("solo", "", 100), wantNode: "n0",
			victims: []string{"low-0", "low-1"}, released: []string{"ns/low"},
			then: waitsOnItsVictims,
		},
		{
			name: "no lower-priority victims", bound: []*v1.Pod{guard, guard1},
			preemptor: pendingPod("solo", "", 100), wantMsg: msg.PreemptPrefix + msg.ReasonNoLowerPriority,
		},
		{
			name: "PreemptNever", bound: lowGang, preemptor: never,
			wantMsg: msg.PreemptPrefix + msg.ReasonPreemptNever,
		},
		{
			name: "a gang preemptor holds the rack and protects its nominated member's room", bound: lowGang,
			preemptor: pendingPod("high-0", "high", 100), others: []*v1.Pod{pendingPod("high-1", "high", 100)},
			shortfall: rackShortfall("high"), wantNode: "n0",
			victims: []string{"low-0", "low-1"}, released: []string{"ns/low"}, holds: []string{"r0"},
			then: protectsNominee,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEvalEnv(t, nodes, clonePods(tc.bound), append([]*v1.Pod{tc.preemptor.DeepCopy()}, tc.others...), tc.shortfall)
			pod := env.pods[tc.preemptor.Name]
			res, status := env.e.Preempt(context.Background(), pod, nil)
			if tc.wantMsg != "" {
				if status.Code() != fwk.Unschedulable || !strings.Contains(status.Message(), tc.wantMsg) || res != nil {
					t.Fatalf("Preempt = %v, %v; want Unschedulable with %q", res, status, tc.wantMsg)
				}
			} else if !status.IsSuccess() || res == nil || res.NominatingInfo.NominatedNodeName != tc.wantNode {
				t.Fatalf("Preempt = %+v, %v; want Success nominating %s", res, status, tc.wantNode)
			}
			if got := env.deleted(); !slices.Equal(got, tc.victims) {
				t.Errorf("deleted %v, want %v", got, tc.victims)
			}
			if !slices.Equal(env.iface.released, tc.released) || !slices.Equal(env.iface.holds, tc.holds) {
				t.Errorf("released %v, held %v; want %v, %v", env.iface.released, env.iface.holds, tc.released, tc.holds)
			}
			if tc.then != nil {
				tc.then(t, env, pod)
			}
		})
	}
}

// waitsOnItsVictims: while the victims terminate, the standalone preemptor keeps its
// nomination, waits, and evicts nobody again; its node's protection woke the blocked pods'
// timer.
func waitsOnItsVictims(t *testing.T, env *evalEnv, pod *v1.Pod) {
	if !slices.Equal(env.iface.woken, []types.UID{pod.UID}) {
		t.Errorf("WakeBlockedAfter for %v, want the preemptor", env.iface.woken)
	}
	terminate(env, "low-0", "low-1")
	pod.Status.NominatedNodeName = "n0"
	if !env.e.Nominates(pod) {
		t.Error("Nominates = false while the victims terminate")
	}
	before := len(env.deleted())
	res, status := env.e.Preempt(context.Background(), pod, nil)
	if res == nil || res.NominatingInfo.NominatedNodeName != "n0" || status.Message() != msg.PreemptWaiting(2, "n0") {
		t.Fatalf("Preempt again = %+v, %v; want a wait nominating n0", res, status)
	}
	if len(env.deleted()) != before {
		t.Errorf("deleted %v, want no eviction while waiting", env.deleted())
	}
}

// protectsNominee: while the victims terminate, the gang's nominated member holds its node's
// room for another gang of lower or equal priority, not for its own gang nor for a gang of
// higher priority.
func protectsNominee(t *testing.T, env *evalEnv, pod *v1.Pod) {
	terminate(env, "low-0", "low-1")
	pod.Status.NominatedNodeName = "n0"
	prio := func(p int32) func() int32 { return func() int32 { return p } }
	for _, c := range []struct {
		own     string
		prio    int32
		protect bool
	}{{"ns/other", 10, true}, {"ns/other", 100, true}, {"ns/other", 200, false}, {"ns/high", 100, false}} {
		got := env.e.WithProtected(c.own, nil, prio(c.prio), testNow)
		r, ok := got["n0"]
		if ok != c.protect || (ok && (r.Pods != 1 || r.Resources["nvidia.com/gpu"] != 1 || !slices.Equal(r.Gangs, []string{"ns/high"}))) {
			t.Errorf("WithProtected(%s, priority %d) = %+v, protected %v; want %v", c.own, c.prio, got, ok, c.protect)
		}
	}
	if !env.e.Nominates(pod) {
		t.Error("Nominates = false for the gang's nominated member while the victims terminate")
	}
	res, status := env.e.Preempt(context.Background(), pod, nil)
	if res == nil || res.NominatingInfo.NominatedNodeName != "n0" || status.Message() != msg.PreemptWaiting(2, "r0") {
		t.Fatalf("Preempt again = %+v, %v; want a wait nominating n0", res, status)
	}
	if len(env.iface.holds) != 1 || len(env.deleted()) != 2 {
		t.Errorf("held %v, deleted %v; want no second preemption", env.iface.holds, env.deleted())
	}
}

// terminate marks pods Terminating in the informer (the API client deleted them).
func terminate(env *evalEnv, names ...string) {
	for _, n := range names {
		ts := metav1.NewTime(testNow)
		env.pods[n].DeletionTimestamp = &ts
	}
}

func clonePods(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}
