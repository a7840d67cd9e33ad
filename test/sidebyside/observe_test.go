package sidebyside

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// binds watches the backlog's pods and records when each was first seen bound.
type binds struct {
	total  int
	cancel context.CancelFunc
	mu     sync.Mutex
	node   map[string]string // pod → node
	gang   map[string]string // pod → gangLabel
	first  time.Time
	last   time.Time
	all    chan struct{}
	// running counts the pods seen Running (kwok marks bound pods Running).
	running map[string]bool
}

// watchBinds starts a pod informer on the namespace and waits for its initial list, so every
// bind after that is an update event.
func watchBinds(ctx context.Context, c kubernetes.Interface, total int) (*binds, error) {
	ctx, cancel := context.WithCancel(ctx)
	b := &binds{total: total, cancel: cancel, node: map[string]string{}, gang: map[string]string{}, all: make(chan struct{}),
		running: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.seen(obj) },
		UpdateFunc: func(_, obj any) { b.seen(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("pod informer did not sync")
	}
	return b, nil
}

func (b *binds) seen(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if pod.Status.Phase == v1.PodRunning {
		b.running[pod.Name] = true
	}
	if _, ok := b.node[pod.Name]; ok {
		return
	}
	b.node[pod.Name] = pod.Spec.NodeName
	b.gang[pod.Name] = pod.Labels[gangLabel]
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	if len(b.node) == b.total {
		close(b.all)
	}
}

func (b *binds) stop() { b.cancel() }

func (b *binds) bound() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.node)
}

// wait waits until every pod is bound, the timeout passes or the scheduler exits.
func (b *binds) wait(ctx context.Context, timeout time.Duration, p *devenv.Process) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-b.all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%d of %d pods bound after %s", b.bound(), b.total, timeout)
		case <-tick.C:
			if p.Exited() {
				return fmt.Errorf("the scheduler exited with %d of %d pods bound; see its log", b.bound(), b.total)
			}
		}
	}
}

// settle waits until kwok has marked every pod Running, so the final heap
// profile of both schedulers sees the same settled cluster rather than a scheduler cache
// still holding assumed pods whose status update has not arrived yet.
func (b *binds) settle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.running) == b.total, nil
	})
	return time.Since(start), err
}

// fill writes the bind times and the split count into res.
func (b *binds) fill(res *result, started time.Time, cliqueOf map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res.startedAt, res.firstAt, res.lastAt = started, b.first, b.last
	res.firstBind = b.first.Sub(started)
	res.lastBind = b.last.Sub(started)
	cliques := map[string]map[string]bool{} // gang → cliques its members are in
	for pod, node := range b.node {
		g := b.gang[pod]
		if cliques[g] == nil {
			cliques[g] = map[string]bool{}
		}
		cliques[g][cliqueOf[node]] = true
	}
	res.gangs = len(cliques)
	for _, cs := range cliques {
		if len(cs) > 1 {
			res.splits++
		}
	}
}
