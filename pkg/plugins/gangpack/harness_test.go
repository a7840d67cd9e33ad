package gangpack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"
)

// The plugin-level test harness: a framework handle with a real snapshot and a real pod
// informer (over a fake clientset), and waiting pods the test registers itself, so a test can
// run PreFilter, Filter, Reserve and Permit on a plugin and force interleavings the framework
// would make unlikely.

const (
	testKey  = "example.com/clique"
	testGPU  = "nvidia.com/gpu"
	testNS   = "ns"
	testWait = 10 * time.Second
)

// fakeHandle implements the parts of fwk.Handle the plugin uses.
type fakeHandle struct {
	fwk.Handle
	snapshot *schedcache.Snapshot
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory

	mu      sync.Mutex
	waiting map[types.UID]*fakeWaiter
	// onIterate, when set, runs at the start of every IterateOverWaitingPods.
	onIterate func()
	activated []string
	events    []recordedEvent
	// dra is the framework's shared DRA manager (nil: DRA off, devices not counted).
	dra fwk.SharedDRAManager
}

func (h *fakeHandle) SharedDRAManager() fwk.SharedDRAManager { return h.dra }

// recordedEvent is one event the plugin emitted through the handle's recorder.
type recordedEvent struct {
	regarding, reason, note string
}

func (h *fakeHandle) EventRecorder() events.EventRecorder { return h }

// Eventf records the event (the handle is its own recorder).
func (h *fakeHandle) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	name := ""
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetNamespace() + "/" + o.GetName()
	}
	h.mu.Lock()
	h.events = append(h.events, recordedEvent{regarding: name, reason: reason, note: fmt.Sprintf(note, args...)})
	h.mu.Unlock()
}

func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister                 { return h.snapshot }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *fakeHandle) ClientSet() kubernetes.Interface                        { return h.client }
func (h *fakeHandle) KubeConfig() *restclient.Config                         { return nil }

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range pods {
		h.activated = append(h.activated, k)
	}
}

func (h *fakeHandle) IterateOverWaitingPods(f func(fwk.WaitingPod)) {
	if h.onIterate != nil {
		h.onIterate()
	}
	h.mu.Lock()
	list := slices.Collect(maps.Values(h.waiting))
	h.mu.Unlock()
	for _, w := range list {
		f(w)
	}
}

func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.waiting[uid]; ok {
		return w
	}
	return nil
}

// register makes the pod a framework waiting pod, as RunPermitPlugins does after Permit.
func (h *fakeHandle) register(p *v1.Pod) *fakeWaiter {
	w := &fakeWaiter{pod: p, done: make(chan struct{})}
	h.mu.Lock()
	h.waiting[p.UID] = w
	h.mu.Unlock()
	return w
}

// fakeWaiter records the verdict on a waiting pod.
type fakeWaiter struct {
	pod  *v1.Pod
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	// verdict is "allowed" or the rejection message.
	verdict string
}

func (w *fakeWaiter) GetPod() *v1.Pod             { return w.pod }
func (w *fakeWaiter) GetPendingPlugins() []string { return []string{Name} }
func (w *fakeWaiter) Allow(string)                { w.decide("allowed") }
func (w *fakeWaiter) Reject(_ string, msg string) { w.decide(msg) }
func (w *fakeWaiter) decide(v string) {
	w.once.Do(func() {
		w.mu.Lock()
		w.verdict = v
		w.mu.Unlock()
		close(w.done)
	})
}

// now returns the verdict so far ("" = none yet).
func (w *fakeWaiter) now() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.verdict
}

// await returns the verdict, or "" if none came within d.
func (w *fakeWaiter) await(d time.Duration) string {
	select {
	case <-w.done:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.verdict
	case <-time.After(d):
		return ""
	}
}

// world is a plugin under test with its cluster.
type world struct {
	t      testing.TB
	ctx    context.Context
	pl     *GangPack
	h      *fakeHandle
	pgs    cache.Indexer
	nodes  []*v1.Node
	pods   []*v1.Pod
	podInf cache.SharedIndexInformer
	// now, after and spawn replace the ledger's clock, timer and goroutine starter when set
	// (ledgerOptions); nil means the real one.
	now   func() time.Time
	after ledger.AfterFunc
	spawn func(f func())
}

// ledgerOptions hand the ledger a clock, a timer and a goroutine starter that follow the
// world's now, after and spawn, so a test sets them after newWorld.
func (w *world) ledgerOptions() ledger.Options {
	return ledger.Options{
		Now: func() time.Time {
			if w.now != nil {
				return w.now()
			}
			return time.Now()
		},
		After: func(d time.Duration, f func()) func() {
			if w.after != nil {
				return w.after(d, f)
			}
			t := time.AfterFunc(d, f)
			return func() { t.Stop() }
		},
		Spawn: func(f func()) {
			if w.spawn != nil {
				w.spawn(f)
				return
			}
			go f()
		},
	}
}

// newWorld builds a plugin over the nodes and pods (pods with spec.nodeName sit on their
// node in the snapshot) and the PodGroups.
func newWorld(t testing.TB, args *gang.Args, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) *world {
	t.Helper()
	return newWorldWith(t, nil, args, nodes, pods, pgs...)
}

// newWorldWith is newWorld whose framework has dra as its shared DRA manager (nil: DRA off);
// ResourceClaimTemplates are served from w.h.factory's informer (addTemplate).
func newWorldWith(t testing.TB, dra fwk.SharedDRAManager, args *gang.Args, nodes []*v1.Node, pods []*v1.Pod, pgs ...*schedv1alpha1.PodGroup) *world {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInf := factory.Core().V1().Pods().Informer()
	ml, err := gang.NewMembers(factory.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHandle{client: client, factory: factory, waiting: map[types.UID]*fakeWaiter{}, dra: dra}
	if args == nil {
		args = testArgs()
	}
	w := &world{t: t, ctx: ctx, h: h, nodes: nodes, podInf: podInf,
		pgs: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	w.pl, err = newPlugin(ctx, args, h, ml, nil, w.ledgerOptions())
	if err != nil {
		w.t.Fatal(err)
	}
	w.pl.podGroups = &podGroupReader{}
	w.pl.podGroups.cur.Store(&pgInformer{lister: pglisters.NewPodGroupLister(w.pgs), informer: nil})
	w.pl.ledger.StartCycle()
	for _, pg := range pgs {
		w.putPodGroup(pg)
	}
	for _, p := range pods {
		w.addPod(p)
	}
	w.resnap()
	return w
}

func testArgs() *gang.Args {
	return &gang.Args{TopologyKey: testKey, PodGroupTopologyKeyAnnotation: "ome.io/topology-key",
		DefaultPermitTimeoutSeconds: ptr.To[int64](600), GCIntervalSeconds: ptr.To[int64](60)}
}

// addPod adds a pod to the informer store (the snapshot follows at resnap).
func (w *world) addPod(p *v1.Pod) {
	w.t.Helper()
	if err := w.podInf.GetIndexer().Add(p); err != nil {
		w.t.Fatal(err)
	}
	w.pods = append(w.pods, p)
}

// updatePod replaces a pod (by UID) in the informer store and the snapshot's pod list.
func (w *world) updatePod(p *v1.Pod) {
	w.t.Helper()
	if err := w.podInf.GetIndexer().Update(p); err != nil {
		w.t.Fatal(err)
	}
	for i, q := range w.pods {
		if q.UID == p.UID {
			w.pods[i] = p
		}
	}
}

func (w *world) putPodGroup(pg *schedv1alpha1.PodGroup) {
	w.t.Helper()
	if err := w.pgs.Add(pg); err != nil {
		w.t.Fatal(err)
	}
}

// resnap rebuilds the snapshot from the world's nodes and pods; assumed maps pod names to the
// node they are assumed on (placed in the snapshot without spec.nodeName in the informer).
func (w *world) resnap(assumed ...*v1.Pod) {
	var onNodes []*v1.Pod
	for _, p := range w.pods {
		if p.Spec.NodeName != "" {
			onNodes = append(onNodes, p)
		}
	}
	w.h.snapshot = schedcache.NewSnapshot(append(onNodes, assumed...), w.nodes)
	if err := w.pl.planner.IndexNodes(w.nodes); err != nil {
		w.t.Fatal(err)
	}
}

// nodeInfos returns the snapshot's node infos.
func (w *world) nodeInfos() []fwk.NodeInfo {
	w.t.Helper()
	list, err := w.h.snapshot.NodeInfos().List()
	if err != nil {
		w.t.Fatal(err)
	}
	return list
}

// cycle is one scheduling cycle's state for a pod.
type cycle struct {
	w   *world
	pod *v1.Pod
	cs  fwk.CycleState
	res *fwk.PreFilterResult
}

// preFilter runs PreFilter for the pod on the current snapshot.
func (w *world) preFilter(p *v1.Pod) (*cycle, *fwk.Status) {
	c := &cycle{w: w, pod: p, cs: framework.NewCycleState()}
	res, st := w.pl.PreFilter(w.ctx, c.cs, p, w.nodeInfos())
	c.res = res
	return c, st
}

// mustPin runs PreFilter and fails unless it succeeds with candidates.
func (w *world) mustPin(p *v1.Pod) *cycle {
	w.t.Helper()
	c, st := w.preFilter(p)
	if !st.IsSuccess() {
		w.t.Fatalf("PreFilter(%s) = %v, want success", p.Name, st)
	}
	return c
}

// reserveOn runs Filter, Reserve and Permit on node and, like the framework, assumes the pod
// there (a copy with spec.nodeName in the snapshot). It returns Permit's status.
func (c *cycle) reserveOn(node string) *fwk.Status {
	w := c.w
	w.t.Helper()
	ni, err := w.h.snapshot.NodeInfos().Get(node)
	if err != nil {
		w.t.Fatal(err)
	}
	if st := w.pl.Filter(w.ctx, c.cs, c.pod, ni); !st.IsSuccess() {
		w.t.Fatalf("Filter(%s on %s) = %v", c.pod.Name, node, st)
	}
	if st := w.pl.Reserve(w.ctx, c.cs, c.pod, node); !st.IsSuccess() {
		w.t.Fatalf("Reserve(%s on %s) = %v", c.pod.Name, node, st)
	}
	st, _ := w.pl.Permit(w.ctx, c.cs, c.pod, node)
	return st
}

// assumed returns a copy of p on node, as the scheduler cache holds an assumed pod.
func assumed(p *v1.Pod, node string) *v1.Pod {
	q := p.DeepCopy()
	q.Spec.NodeName = node
	return q
}

// gpuNode is a node with gpus GPUs in domain (no label when domain is "").
func testNode(name, domain string, gpus int64) *v1.Node {
	n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{testGPU: strconv.FormatInt(gpus, 10), v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).Obj()
	n.Labels = map[string]string{v1.LabelHostname: name}
	if domain != "" {
		n.Labels[testKey] = domain
	}
	return n
}

// member is a gang member requesting gpus GPUs.
func gangMember(name, group string, gpus int64) *v1.Pod {
	p := st.MakePod().Namespace(testNS).Name(name).UID("uid-" + name).SchedulerName("ome-scheduler").Req(map[v1.ResourceName]string{testGPU: strconv.FormatInt(gpus, 10)}).Obj()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[PodGroupLabel] = group
	return p
}

// podGroup is a PodGroup of minMember with a 600 s timeout.
func podGroup(name string, minMember int32) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-" + name)},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: minMember, ScheduleTimeoutSeconds: ptr.To[int32](600)},
	}
}

// terminating marks a copy of p as being deleted.
func terminating(p *v1.Pod) *v1.Pod {
	q := p.DeepCopy()
	now := metav1.Now()
	q.DeletionTimestamp = &now
	q.DeletionGracePeriodSeconds = ptr.To[int64](30)
	return q
}

// testArgsObject is testArgs as the scheduler hands them to New.
func testArgsObject(t *testing.T) runtime.Object {
	t.Helper()
	return &runtime.Unknown{ContentType: runtime.ContentTypeJSON,
		Raw: []byte(`{"topologyKey":"` + testKey + `","defaultPermitTimeoutSeconds":600,"gcIntervalSeconds":60}`)}
}

// standalone is a pod without the pod-group label requesting one GPU.
func standalone(name string) *v1.Pod {
	return st.MakePod().Namespace(testNS).Name(name).UID("uid-" + name).SchedulerName("ome-scheduler").
		Req(map[v1.ResourceName]string{testGPU: "1"}).Obj()
}

// APICacher is nil: the scheduler's SchedulerAsyncAPICalls gate is off (its default in 1.35),
// so binders call the API themselves.
func (h *fakeHandle) APICacher() fwk.APICacher { return nil }

// ProfileName is the scheduler profile the plugin runs in: pods of another spec.schedulerName
// are not its own.
func (h *fakeHandle) ProfileName() string { return "ome-scheduler" }
