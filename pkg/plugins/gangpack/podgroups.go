package gangpack

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// podGroupResource is the EventResource name of PodGroups for queueing hints.
const podGroupResource = "podgroups.v1alpha1.scheduling.x-k8s.io"

// podGroupReader is the plugin's own PodGroup informer: all namespaces, no resync. It keeps
// retrying in the background, so a CRD installed after start is picked up without a restart:
// while the resource is not served, discovery is polled and a fresh informer is started as
// soon as it appears (the first informer's list retries back off up to half a minute).
type podGroupReader struct {
	cur      atomic.Pointer[pgInformer]
	client   pgclientset.Interface
	onChange func(old, cur *schedv1alpha1.PodGroup)
}

type pgInformer struct {
	informer cache.SharedIndexInformer
	lister   pglisters.PodGroupLister
	stop     context.CancelFunc
}

// crdPollInterval is how often discovery is asked whether PodGroups are served yet.
const crdPollInterval = 2 * time.Second

// newPodGroupReader starts the informer with the scheduler's context and reports whether the
// PodGroup resource is served right now (discovery).
func newPodGroupReader(ctx context.Context, cfg *restclient.Config, kube kubernetes.Interface, onChange func(old, cur *schedv1alpha1.PodGroup)) (*podGroupReader, bool, error) {
	client, err := pgclientset.NewForConfig(cfg)
	if err != nil {
		return nil, false, fmt.Errorf("create PodGroup client: %w", err)
	}
	r := &podGroupReader{client: client, onChange: onChange}
	served := podGroupsServed(kube)
	if err := r.start(ctx); err != nil {
		return nil, false, err
	}
	if !served && kube != nil {
		go r.watchForCRD(ctx, kube)
	}
	return r, served, nil
}

func podGroupsServed(kube kubernetes.Interface) bool {
	if kube == nil {
		return false
	}
	list, err := kube.Discovery().ServerResourcesForGroupVersion(schedv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	for _, res := range list.APIResources {
		if res.Name == "podgroups" {
			return true
		}
	}
	return false
}

// start builds and starts a fresh informer and makes it current, stopping the previous one.
func (r *podGroupReader) start(ctx context.Context) error {
	ictx, cancel := context.WithCancel(ctx)
	factory := pginformers.NewSharedInformerFactory(r.client, 0)
	inf := factory.Scheduling().V1alpha1().PodGroups()
	pi := &pgInformer{informer: inf.Informer(), lister: inf.Lister(), stop: cancel}
	if _, err := pi.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pg, ok := obj.(*schedv1alpha1.PodGroup); ok {
				r.onChange(nil, pg)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*schedv1alpha1.PodGroup)
			n, ok2 := newObj.(*schedv1alpha1.PodGroup)
			if ok1 && ok2 && podGroupChanged(o, n) {
				r.onChange(o, n)
			}
		},
	}); err != nil {
		cancel()
		return fmt.Errorf("register PodGroup change handler: %w", err)
	}
	factory.Start(ictx.Done())
	if old := r.cur.Swap(pi); old != nil {
		old.stop()
	}
	return nil
}

// watchForCRD polls discovery until PodGroups are served, then restarts the informer so it
// syncs at once instead of after its list backoff.
func (r *podGroupReader) watchForCRD(ctx context.Context, kube kubernetes.Interface) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	_ = wait.PollUntilContextCancel(ctx, crdPollInterval, false, func(ctx context.Context) (bool, error) {
		if r.synced() {
			return true, nil
		}
		if !podGroupsServed(kube) {
			return false, nil
		}
		logger.Info("PodGroup resource is served now; starting the PodGroup informer")
		if err := r.start(ctx); err != nil {
			logger.Error(err, "Restart the PodGroup informer")
			return false, nil
		}
		return true, nil
	})
}

// podGroupChanged reports a semantic change of spec, labels or annotations (status-only or
// resourceVersion-only writes are ignored).
func podGroupChanged(o, n *schedv1alpha1.PodGroup) bool {
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
}

func (r *podGroupReader) synced() bool { return r.cur.Load().informer.HasSynced() }

// waitForSync waits for the initial list at most timeout; it reports whether it synced.
func (r *podGroupReader) waitForSync(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), r.synced)
}

// Get returns the PodGroup, or an error when it is not (yet) known (also the planner's
// plan.PodGroups).
func (r *podGroupReader) Get(ns, name string) (*schedv1alpha1.PodGroup, error) {
	return r.cur.Load().lister.PodGroups(ns).Get(name)
}

// List lists the namespace's PodGroups the selector selects; nil without a reader or before
// the informer exists.
func (r *podGroupReader) List(ns string, sel labels.Selector) ([]*schedv1alpha1.PodGroup, error) {
	if r == nil {
		return nil, nil
	}
	cur := r.cur.Load()
	if cur == nil {
		return nil, nil
	}
	return cur.lister.PodGroups(ns).List(sel)
}

// planPodGroups is the planner's PodGroup reader: the plugin's reader once it is built, none
// before (a scheduler without a kubeconfig serves no PodGroup).
type planPodGroups struct{ pl *GangPack }

func (r planPodGroups) Get(ns, name string) (*schedv1alpha1.PodGroup, error) {
	if pr := r.pl.podGroups; pr != nil {
		return pr.Get(ns, name)
	}
	return plan.NoPodGroups{}.Get(ns, name)
}

func (r planPodGroups) List(ns string, sel labels.Selector) ([]*schedv1alpha1.PodGroup, error) {
	if pr := r.pl.podGroups; pr != nil {
		return pr.List(ns, sel)
	}
	return nil, nil
}
