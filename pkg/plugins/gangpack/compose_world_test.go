package gangpack

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"
)

// The simulated cluster of the composition test: nodes, PodGroups and pods as the API server
// holds them, the scheduling queue and the scheduler cache (assumed pods) as kube-scheduler
// keeps them, and an injected clock whose timers fire only when the simulator advances it.
// The plugin is the real one; everything around it is a small, deterministic model.

// podState is where a pod is in the simulated scheduler.
type podState int

const (
	stGated       podState = iota // scheduling gates: PreEnqueue keeps it out of the queue
	stActive                      // in the active (or backoff) queue
	stParked                      // in the unschedulable pool until an event, hint or activation
	stWaiting                     // assumed, waiting at Permit
	stAllowed                     // assumed, admitted by Permit, not bound yet
	stBound                       // bound (spec.nodeName set)
	stTerminating                 // bound and being deleted gracefully
	stGone                        // deleted
)

// notReadyTaint is the taint the node lifecycle controller puts on a NotReady node.
const notReadyTaint = "node.kubernetes.io/not-ready"

// simPod is one pod and what the simulated scheduler knows about it.
type simPod struct {
	pod    *v1.Pod
	state  podState
	node   string            // assumed or bound node
	placed map[string]string // node labels (clique, zone) when the pod was assumed there
	cs     fwk.CycleState
	waiter *fakeWaiter
	// copy is the framework's assumed copy of the pod in its current attempt (assume).
	copy *v1.Pod
	// nomOK is a nomination no-phantom accepted: covered when judged, or inherited at a
	// restart; it holds until the pod's next scheduling cycle (checkNominations).
	nomOK string
	// deadline is the framework's Permit timeout; goneAt ends a graceful deletion.
	deadline, goneAt time.Time
	// byGang and byFit record which plugins rejected the pod (its queueing hints).
	byGang, byFit bool
	// woken records an activation or hinted event while the pod was in flight.
	woken bool
	// failures and backoff model the backoff queue: a failed pod moved by an event waits
	// until backoff (1 s doubling to 10 s); an activation skips it.
	failures int
	backoff  time.Time
}

func (sp *simPod) assumed() bool { return sp.state == stWaiting || sp.state == stAllowed }

// onNode reports whether the pod occupies its node (assumed, bound or terminating).
func (sp *simPod) onNode() bool {
	return sp.assumed() || sp.state == stBound || sp.state == stTerminating
}

// simTimer is a callback the plugin queued through gangs.after, or a GC tick.
type simTimer struct {
	at  time.Time
	seq int
	gen int // the plugin instance that queued it: a restart drops the old ones
	f   func()
}

// sim is one simulated cluster with one plugin instance at a time.
type sim struct {
	t testing.TB
	// dra: the nodes publish a DRA channel each, and some pods take one (compose_dra_test.go).
	dra bool
	// flushFreed, once liveness has flushed the parked pods, is the nodes a preemption then
	// evicted pods from (nil before).
	flushFreed map[string]bool
	rng        *rand.Rand
	now        time.Time
	nodes      []*v1.Node
	pods       []*simPod
	pgs        []*schedv1alpha1.PodGroup
	timers     []simTimer
	seq        int

	gen    int
	ctx    context.Context
	cancel context.CancelFunc
	pl     *GangPack
	h      *fakeHandle
	client *fake.Clientset
	podInf cache.SharedIndexInformer
	pgIdx  cache.Indexer
	// doubts is the plugin's pod-informer handler for bindings in doubt.
	doubts    cache.ResourceEventHandler
	spawned   []func() // the plugin's goroutines, run by afterPlugin
	eventSeen int
	nextName  int
	chk       *checker
	// cycle is the pod in its scheduling cycle and inflight the events that arrived during it
	// (deliver); trace, when not nil, collects what happened.
	cycle    *simPod
	inflight []func(*simPod) bool
	trace    []string
	// replacements counts the replacement pods nodefail created (their names' suffix).
	replacements int
}

func (s *sim) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace = append(s.trace, fmt.Sprintf("%s ", s.now.Sub(time.Unix(1_000_000, 0)))+fmt.Sprintf(format, args...))
	}
}

// captureInformer records the handlers the plugin registers on the pod informer, so the
// simulator can deliver pod events to them; its store is the real informer's.
type captureInformer struct {
	cache.SharedIndexInformer
	handlers []cache.ResourceEventHandler
}

func (c *captureInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	c.handlers = append(c.handlers, h)
	return nil, nil
}

// syncedInformer is a PodGroup informer that has synced (the lister is the simulator's).
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }

func composeArgs() *gang.Args {
	a := testArgs()
	a.PlacementGroupLabel = testGroupLabel
	a.Preemption = true
	// The bind window off: its wait blocks the scheduling goroutine until another goroutine's
	// bind ends, and the simulator plays every step on one goroutine. The window has tests of
	// its own (internal/pace, pace_test.go) and runs in the integration and e2e suites.
	a.BindWindowMilliseconds = ptr.To[int64](0)
	return a
}

func newSim(t testing.TB, seed int64) *sim { return newSimWith(t, seed, false) }

// newSimWith is newSim whose nodes publish a DRA channel each when dra is set
// (compose_dra_test.go).
func newSimWith(t testing.TB, seed int64, dra bool) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewSource(seed)), now: time.Unix(1_000_000, 0), dra: dra}
	// The API client only takes the preemption's status patches and deletions (the
	// simulator applies them from the Preempted events): a tracker per sequence costs more
	// than the whole sequence.
	s.client = fake.NewClientset()
	s.client.PrependReactor("*", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &v1.Pod{}, nil
	})
	factory := informers.NewSharedInformerFactory(s.client, 0)
	s.podInf = factory.Core().V1().Pods().Informer()
	s.pgIdx = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.chk = newChecker(s)
	if dra {
		if err := factory.Resource().V1().ResourceClaimTemplates().Informer().GetIndexer().Add(channelTemplate()); err != nil {
			t.Fatal(err)
		}
	}
	s.start(factory)
	return s
}

// start builds a fresh plugin instance over the API state (a scheduler process start).
func (s *sim) start(factory informers.SharedInformerFactory) {
	if s.cancel != nil {
		s.cancel()
	}
	s.gen++
	s.ctx, s.cancel = context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	s.h = &fakeHandle{client: s.client, factory: factory, waiting: map[types.UID]*fakeWaiter{}}
	if s.dra {
		s.h.dra = simDRA{s}
	}
	ml, err := gang.NewMembers(factory.Core().V1().Pods())
	if err != nil {
		s.t.Fatal(err)
	}
	gen := s.gen
	s.pl, err = newPlugin(s.ctx, composeArgs(), s.h, ml, nil, ledger.Options{
		Now:   func() time.Time { return s.now },
		After: func(d time.Duration, f func()) func() { return s.addTimer(gen, d, f) },
		// The plugin's goroutines (a waiter's supervisor, the eviction calls) run at the next
		// afterPlugin, as one step of simulated time: on their own they would act at
		// real-time moments the sequence does not control, and the same seed would play
		// differently.
		Spawn: func(f func()) { s.spawned = append(s.spawned, f) },
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.pl.registerPodGroupEvents = true
	s.pl.podGroups = &podGroupReader{}
	s.pl.podGroups.cur.Store(&pgInformer{lister: pglisters.NewPodGroupLister(s.pgIdx), informer: syncedInformer{}})
	s.pl.evaluator.UsePDBs(nil)
	capture := &captureInformer{SharedIndexInformer: s.podInf}
	if err := s.pl.ledger.WatchDoubts(capture); err != nil {
		s.t.Fatal(err)
	}
	s.doubts = capture.handlers[0]
	s.eventSeen = 0
	s.resnap()
}

func (s *sim) addTimer(gen int, d time.Duration, f func()) (stop func()) {
	s.seq++
	seq := s.seq
	s.timers = append(s.timers, simTimer{at: s.now.Add(d), seq: seq, gen: gen, f: f})
	return func() {
		for i, tm := range s.timers {
			if tm.seq == seq {
				s.timers = append(s.timers[:i:i], s.timers[i+1:]...)
				return
			}
		}
	}
}

// resnap rebuilds the scheduler snapshot: bound and terminating pods, and assumed ones.
func (s *sim) resnap() {
	var pods []*v1.Pod
	for _, sp := range s.pods {
		if sp.onNode() && s.node(sp.node) != nil {
			q := sp.pod
			if q.Spec.NodeName == "" {
				q = assumed(q, sp.node)
			}
			pods = append(pods, q)
		}
	}
	s.h.snapshot = schedcache.NewSnapshot(pods, s.nodes)
	if err := s.pl.planner.IndexNodes(s.nodes); err != nil {
		s.t.Fatal(err)
	}
}

// nodeInfos returns the snapshot's nodes sorted by name.
func (s *sim) nodeInfos() []fwk.NodeInfo {
	list, err := s.h.snapshot.NodeInfos().List()
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Node().Name < list[j].Node().Name })
	return list
}

func (s *sim) node(name string) *v1.Node {
	for _, n := range s.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (s *sim) podGroup(name string) *schedv1alpha1.PodGroup {
	obj, ok, _ := s.pgIdx.GetByKey(testNS + "/" + name)
	if !ok {
		return nil
	}
	return obj.(*schedv1alpha1.PodGroup)
}

// addNode adds a node of clique (zone = clique's parity) with gpus GPUs.
func (s *sim) addNode(clique, gpus int) {
	n := testNode(fmt.Sprintf("n%d", s.nextName), fmt.Sprintf("c%d", clique), int64(gpus))
	s.nextName++
	n.Labels[testZoneKey] = fmt.Sprintf("z%d", clique%2)
	s.nodes = append(s.nodes, n)
	s.nodeEvent(nil, n)
}

// addPod creates a pod in the API (informer store and clientset) and queues it.
func (s *sim) addPod(p *v1.Pod) {
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	p.CreationTimestamp = metav1.NewTime(s.now)
	if err := s.podInf.GetIndexer().Add(p); err != nil {
		s.t.Fatal(err)
	}
	sp := &simPod{pod: p, state: stActive}
	if len(p.Spec.SchedulingGates) > 0 {
		sp.state = stGated
	}
	s.pods = append(s.pods, sp)
}

// updatePod writes a new version of the pod to the informer store and tells the plugin's
// pod handlers.
func (s *sim) updatePod(sp *simPod, p *v1.Pod) {
	old := sp.pod
	sp.pod = p
	if err := s.podInf.GetIndexer().Update(p); err != nil {
		s.t.Fatal(err)
	}
	s.doubts.OnUpdate(old, p)
}
