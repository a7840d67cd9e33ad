package plan

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// fakeLedger is a Ledger over fixed answers that records every call that carries out a
// decision, records a wait or wakes pods, one line per call, in call order. Reads are
// answered from its fields and not recorded.
type fakeLedger struct {
	pin      *placement.Commitment // the gang's pin (nil: none)
	attempts map[types.UID]uint64  // pod → the attempt it passed Reserve under
	reserved map[types.UID]string  // pod → the node it is reserved on
	pods     []*v1.Pod             // the gang's pods, as the member index lists them
	// waitersRejected is what Drop answers.
	waitersRejected bool
	// others, failed, resting and forming answer ReservedExcept (and Read's Others), Failed,
	// Resting and FormingIn; WrapFailed makes the resting domains the failed ones.
	others  map[string]placement.Reserved
	failed  map[string]struct{}
	resting map[string]struct{}
	forming int
	// store, when set, carries Choose out (a best-fit pin over the rooms).
	store *placement.Store

	calls []string
}

var (
	_ Reader  = (*fakeLedger)(nil)
	_ Effects = (*fakeLedger)(nil)
)

func (f *fakeLedger) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeLedger) Commitment(string) (placement.Commitment, bool) {
	if f.pin == nil {
		return placement.Commitment{}, false
	}
	return *f.pin, true
}
func (f *fakeLedger) Pinned(string) bool                                      { return f.pin != nil }
func (f *fakeLedger) Generation() uint64                                      { return 1 }
func (f *fakeLedger) ReservedExcept(string) map[string]placement.Reserved     { return f.others }
func (f *fakeLedger) FormingIn(string, string) int                            { return f.forming }
func (f *fakeLedger) Failed(placement.GangOwner, string) map[string]struct{}  { return f.failed }
func (f *fakeLedger) Resting(placement.GangOwner, string) map[string]struct{} { return f.resting }
func (f *fakeLedger) FailedHas(_ placement.GangOwner, d placement.DomainRef) bool {
	_, ok := f.failed[d.Value]
	return ok
}
func (f *fakeLedger) Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	return gang.OnNodes(all, g)
}
func (f *fakeLedger) HeldDomainRefs() []placement.DomainRef { return nil }
func (f *fakeLedger) GroupReady(string) bool                { return false }

func (f *fakeLedger) WaiterNodes(g gang.Info, id uint64) []string {
	var out []string
	for _, q := range f.pods {
		if a, ok := f.attempts[q.UID]; ok && a == id && q.Spec.NodeName == "" && q.Namespace == g.Namespace && q.Labels[gang.Label] == g.Name {
			if node, ok := f.reserved[q.UID]; ok {
				out = append(out, node)
			}
		}
	}
	return out
}

func (f *fakeLedger) Choose(req placement.ChooseRequest, _ gang.Info) placement.ChooseResult {
	f.record("Choose %s need=%d", req.Gang, req.Need)
	if f.store == nil {
		return placement.ChooseResult{}
	}
	return f.store.Choose(req)
}

func (f *fakeLedger) Pin(req placement.PinRequest, _ gang.Info, group string) (placement.Commitment, placement.PinOutcome) {
	f.record("Pin %s %s group=%q", req.Gang, req.Domain, group)
	return placement.Commitment{}, placement.HeldByOther
}

func (f *fakeLedger) PinGroup(group string, reqs []placement.PinRequest, _ []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	f.record("PinGroup %s %d", group, len(reqs))
	return nil, placement.HeldByOther
}

func (f *fakeLedger) Reserve(_ klog.Logger, key string, id uint64, _ placement.Reservation, _ placement.Capacity) bool {
	f.record("Reserve %s %d", key, id)
	return true
}

func (f *fakeLedger) Regrow(key string, id uint64, remaining int) (placement.Commitment, bool) {
	f.record("Regrow %s %d remaining=%d", key, id, remaining)
	if f.pin == nil {
		return placement.Commitment{}, false
	}
	grown := *f.pin
	grown.Remaining = remaining
	return grown, true
}

func (f *fakeLedger) Drop(_ klog.Logger, c placement.Commitment, d gang.Drop) bool {
	f.record("Drop %s %d %+v", c.Gang, c.ID, d)
	return f.waitersRejected
}

func (f *fakeLedger) WrapFailed(o placement.GangOwner) {
	f.record("WrapFailed %s", o.Gang)
	f.failed = f.resting
}

func (f *fakeLedger) ParkBlocked(_ klog.Logger, pod *v1.Pod, generation uint64) {
	f.record("ParkBlocked %s/%s %d", pod.Namespace, pod.Name, generation)
}

func (f *fakeLedger) Await(awaited, waiter *v1.Pod) {
	f.record("Await %s/%s by %s/%s", awaited.Namespace, awaited.Name, waiter.Namespace, waiter.Name)
}

func (f *fakeLedger) MembersMissing(key string) { f.record("MembersMissing %s", key) }

func (f *fakeLedger) MembersComplete(_ klog.Logger, info gang.Info, except, trigger string) (int, bool) {
	f.record("MembersComplete %s except=%s trigger=%s", info.Key, except, trigger)
	return 1, true
}

func (f *fakeLedger) GroupWaits(group, why string) (string, bool) {
	f.record("GroupWaits %s %s", group, why)
	return "", false
}

func (f *fakeLedger) ActivateGroup(_ klog.Logger, partners []types.NamespacedName, except string) int {
	f.record("ActivateGroup %v except=%s", partners, except)
	return 0
}

// Test gang: ns/g, minMember 3, under testKey. Nodes a0 and a1 are in domain a, b0 in b.
const (
	testGang = "ns/g"
	testUID  = "pg-uid"
)

func testInfo() gang.Info {
	return gang.Info{Key: testGang, Namespace: "ns", Name: "g", UID: testUID, MinMember: 3, TopologyKey: testKey}
}

func testNodes() []*v1.Node {
	return []*v1.Node{testNode("a0", "a", 8), testNode("a1", "a", 8), testNode("b0", "b", 8)}
}

// member is a member of ns/g, on node when node is not "".
func member(name, node string) *v1.Pod {
	return st.MakePod().Namespace("ns").Name(name).UID(name).Label(gang.Label, "g").Node(node).Obj()
}

// newTestPlanner builds the planner of one PreFilter for pod over a snapshot of nodes and
// pods (those with a node sit on it), every pod also listed as a gang member, with l as the
// ledger.
func newTestPlanner(t *testing.T, l *fakeLedger, nodes []*v1.Node, pod *v1.Pod, pods ...*v1.Pod) *cycle {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	members, err := gang.NewMembers(factory.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	var onNodes []*v1.Pod
	l.pods = append([]*v1.Pod{pod}, pods...)
	for _, q := range l.pods {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(q); err != nil {
			t.Fatal(err)
		}
		if q.Spec.NodeName != "" {
			onNodes = append(onNodes, q)
		}
	}
	snapshot := schedcache.NewSnapshot(onNodes, nodes)
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(Options{Args: &gang.Args{TopologyKey: testKey}, Reader: l, Effects: l, Members: members,
		Nodes: snapshot.NodeInfos, Quality: NoQuality{}, PodGroups: NoPodGroups{}, Victims: NoVictims{}})
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	return pl.newCycle(logger, pod, testInfo(), all, gang.Reading{Generation: l.Generation(), Placed: l.Placed(testInfo(), all)}, l)
}

func (f *fakeLedger) Read(g gang.Info, all []fwk.NodeInfo) gang.Reading {
	r := gang.Reading{Generation: f.Generation(), Placed: f.Placed(g, all), Others: f.others, Failed: f.failed}
	if c, ok := f.Commitment(g.Key); ok {
		r.Pin = &c
	}
	return r
}
