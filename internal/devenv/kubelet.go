package devenv

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// DefaultMaxGrace caps how long the fake kubelet lets a deleted pod stay Terminating: pods
// ask for 30 s by default, which would make every test that deletes a member wait 30 s.
const DefaultMaxGrace = 3 * time.Second

// Kubelet is a fake kubelet for every node of a control plane: it marks bound pods Running
// and Ready, and finishes the graceful deletion of a bound pod once its grace period (capped
// at MaxGrace) has passed, so a deleted member stays Terminating — still on its node, still
// holding its resources — for a while, as on a real cluster. Unbound pods need no kubelet:
// the API server deletes them at once. The integration, end-to-end and reliability tests use
// it; `make demo` and the side-by-side runs use kwok instead (kwok.go, Options.Kwok), and
// docs/benchmarks.md ("Simulated nodes") says why.
type Kubelet struct {
	client   kubernetes.Interface
	lister   corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]
	maxGrace time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
}

// StartKubelet starts a fake kubelet; maxGrace 0 means DefaultMaxGrace.
func StartKubelet(ctx context.Context, c kubernetes.Interface, maxGrace time.Duration) (*Kubelet, error) {
	if maxGrace <= 0 {
		maxGrace = DefaultMaxGrace
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(c, 0)
	pods := factory.Core().V1().Pods()
	k := &Kubelet{
		client: c, lister: pods.Lister(), maxGrace: maxGrace, cancel: cancel, done: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	go func() {
		defer close(k.done)
		for k.next(ctx) {
		}
	}()
	return k, nil
}

// Stop stops the kubelet and waits for its worker.
func (k *Kubelet) Stop() {
	if k == nil {
		return
	}
	k.cancel()
	<-k.done
}

func (k *Kubelet) next(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	retry, after, err := k.sync(ctx, key)
	switch {
	case err != nil:
		k.queue.AddRateLimited(key)
	case retry:
		k.queue.AddAfter(key, after)
	default:
		k.queue.Forget(key)
	}
	return true
}

// sync acts on one pod; retry asks to be called again after the returned delay.
func (k *Kubelet) sync(ctx context.Context, key string) (bool, time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false, 0, nil
	}
	p, err := k.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || p == nil || p.Spec.NodeName == "" {
		return false, 0, nil
	}
	if p.DeletionTimestamp != nil {
		return k.finishDeletion(ctx, p)
	}
	if p.Status.Phase == v1.PodPending {
		return false, 0, k.markRunning(ctx, p)
	}
	return false, 0, nil
}

// finishDeletion deletes the pod for good once its (capped) grace period has passed.
func (k *Kubelet) finishDeletion(ctx context.Context, p *v1.Pod) (bool, time.Duration, error) {
	grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
	requested := p.DeletionTimestamp.Add(-grace)
	due := requested.Add(min(grace, k.maxGrace))
	if wait := time.Until(due); wait > 0 {
		return true, wait, nil
	}
	err := k.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &p.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, 0, nil
	}
	return false, 0, err
}

func (k *Kubelet) markRunning(ctx context.Context, p *v1.Pod) error {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = v1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = append(p.Status.Conditions,
		v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: now})
	_, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the update event brings it back
	}
	return err
}

// WaitGone waits until the pod no longer exists (its graceful deletion finished).
func WaitGone(ctx context.Context, c kubernetes.Interface, ns, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
