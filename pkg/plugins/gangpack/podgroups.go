package gangpack

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"
)

// podGroupResource is the EventResource name of PodGroups for queueing hints.
const podGroupResource = "podgroups.v1alpha1.scheduling.x-k8s.io"

// podGroupReader is the plugin's own PodGroup informer: all namespaces, no resync. It keeps
// retrying in the background, so a CRD installed after start is picked up without a restart.
type podGroupReader struct {
	informer cache.SharedIndexInformer
	lister   pglisters.PodGroupLister
}

// newPodGroupReader starts the informer with the scheduler's context and reports whether the
// PodGroup resource is served right now (discovery).
func newPodGroupReader(ctx context.Context, cfg *restclient.Config, kube kubernetes.Interface, onChange func(old, cur *schedv1alpha1.PodGroup)) (*podGroupReader, bool, error) {
	client, err := pgclientset.NewForConfig(cfg)
	if err != nil {
		return nil, false, fmt.Errorf("create PodGroup client: %w", err)
	}
	factory := pginformers.NewSharedInformerFactory(client, 0)
	inf := factory.Scheduling().V1alpha1().PodGroups()
	r := &podGroupReader{informer: inf.Informer(), lister: inf.Lister()}
	if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pg, ok := obj.(*schedv1alpha1.PodGroup); ok {
				onChange(nil, pg)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*schedv1alpha1.PodGroup)
			n, ok2 := newObj.(*schedv1alpha1.PodGroup)
			if ok1 && ok2 && podGroupChanged(o, n) {
				onChange(o, n)
			}
		},
	}); err != nil {
		return nil, false, fmt.Errorf("register PodGroup change handler: %w", err)
	}
	served := false
	if kube != nil {
		if list, err := kube.Discovery().ServerResourcesForGroupVersion(schedv1alpha1.SchemeGroupVersion.String()); err == nil {
			for _, res := range list.APIResources {
				if res.Name == "podgroups" {
					served = true
				}
			}
		}
	}
	factory.Start(ctx.Done())
	return r, served, nil
}

// podGroupChanged reports a semantic change of spec, labels or annotations (status-only or
// resourceVersion-only writes are ignored).
func podGroupChanged(o, n *schedv1alpha1.PodGroup) bool {
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
}

func (r *podGroupReader) synced() bool { return r.informer.HasSynced() }

// waitForSync waits for the initial list at most timeout; it reports whether it synced.
func (r *podGroupReader) waitForSync(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced)
}

// get returns the PodGroup or nil when it is not (yet) known.
func (r *podGroupReader) get(ns, name string) (*schedv1alpha1.PodGroup, error) {
	return r.lister.PodGroups(ns).Get(name)
}

// onPodGroupChange wakes the live unbound members of a PodGroup that was added or changed.
func (pl *GangPack) onPodGroupChange(_, cur *schedv1alpha1.PodGroup) {
	if pl.members == nil {
		return
	}
	logger := klog.Background().WithValues("plugin", Name)
	pods, err := pl.members.liveUnbound(cur.Namespace, cur.Name, "")
	if err != nil {
		logger.Error(err, "List gang members", "gang", cur.Namespace+"/"+cur.Name)
		return
	}
	pl.activate(logger, triggerPodGroupChange, pods)
}
