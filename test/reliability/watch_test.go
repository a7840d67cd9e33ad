package reliability

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// podWatch records, from an informer on the world's namespace, when the test first saw each
// pod bound (and where) and when it first saw it Terminating or deleted: the repair and
// failover measurements take their times from it (the API's PodScheduled condition has
// whole seconds only).
type podWatch struct {
	mu    sync.Mutex
	bound map[types.UID]time.Time
	node  map[types.UID]string
	gone  map[types.UID]time.Time
}

func (w *world) watchPods() *podWatch {
	w.t.Helper()
	pw := &podWatch{bound: map[types.UID]time.Time{}, node: map[types.UID]string{}, gone: map[types.UID]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(w.cp.Client, 0, informers.WithNamespace(w.ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pw.seen(obj.(*v1.Pod), false) },
		UpdateFunc: func(_, obj any) { pw.seen(obj.(*v1.Pod), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				pw.seen(p, true)
			}
		},
	}); err != nil {
		w.t.Fatal(err)
	}
	factory.Start(w.ctx.Done())
	factory.WaitForCacheSync(w.ctx.Done())
	return pw
}

func (pw *podWatch) seen(p *v1.Pod, deleted bool) {
	now := time.Now()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if _, ok := pw.bound[p.UID]; !ok && p.Spec.NodeName != "" {
		pw.bound[p.UID], pw.node[p.UID] = now, p.Spec.NodeName
	}
	if _, ok := pw.gone[p.UID]; !ok && (deleted || p.DeletionTimestamp != nil) {
		pw.gone[p.UID] = now
	}
}

// boundAt is when the pod was first seen bound, and on which node.
func (pw *podWatch) boundAt(uid types.UID) (time.Time, string, bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	at, ok := pw.bound[uid]
	return at, pw.node[uid], ok
}

// goneAt is when the pod was first seen Terminating or deleted.
func (pw *podWatch) goneAt(uid types.UID) (time.Time, bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	at, ok := pw.gone[uid]
	return at, ok
}

// durationPercentile is the p-quantile of sorted (nearest rank), 0 when empty.
func durationPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
