package gang

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// memberIndex indexes the scheduler's shared pod informer by "namespace/pod-group value".
const memberIndex = "gangpack.ome.io/pod-group"

// Members lists a gang's pods from the scheduler's shared pod informer.
type Members struct {
	indexer cache.Indexer
	lister  corelisters.PodLister
	// scheduler is the spec.schedulerName of the pods LiveUnbound lists; "" = any.
	scheduler string
}

// OnlyScheduler makes LiveUnbound list only pods whose spec.schedulerName is name (the
// profile's): another scheduler's pods may carry the same pod-group label, and are never
// this scheduler's to wake, resume or plan around. Call it before the informers start.
func (m *Members) OnlyScheduler(name string) { m.scheduler = name }

// Ours reports whether the pod is the scheduler's (every pod when no name was set).
func (m *Members) Ours(p *v1.Pod) bool {
	return m.scheduler == "" || p.Spec.SchedulerName == m.scheduler
}

// NewMembers indexes the scheduler's shared pod informer by gang and lists gangs from it.
func NewMembers(pods coreinformers.PodInformer) (*Members, error) {
	inf := pods.Informer()
	ml := &Members{indexer: inf.GetIndexer(), lister: pods.Lister()}
	if _, exists := inf.GetIndexer().GetIndexers()[memberIndex]; exists {
		return ml, nil
	}
	if err := inf.AddIndexers(cache.Indexers{memberIndex: memberKeys}); err != nil {
		return nil, err
	}
	return ml, nil
}

// NewMembersOf lists gangs from a fixed set of pods instead of the scheduler's informer: the
// planning of `kubectl ome` runs on what it read from the API server.
func NewMembersOf(pods []*v1.Pod) (*Members, error) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{memberIndex: memberKeys})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			return nil, err
		}
	}
	return &Members{indexer: indexer, lister: corelisters.NewPodLister(indexer)}, nil
}

// memberKeys indexes a gang member under "namespace/pod-group value".
func memberKeys(obj any) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	if v := p.Labels[Label]; v != "" {
		return []string{p.Namespace + "/" + v}, nil
	}
	return nil, nil
}

// List returns every pod of the gang (any phase).
func (m *Members) List(ns, name string) ([]*v1.Pod, error) {
	objs, err := m.indexer.ByIndex(memberIndex, ns+"/"+name)
	if err != nil {
		return nil, fmt.Errorf("list members of gang %s/%s: %w", ns, name, err)
	}
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// Live reports whether a pod counts as a living member: not being deleted, not finished.
func Live(p *v1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// Pending reports whether the informer still shows the pod (same UID; any when uid is empty)
// live and unbound.
func (m *Members) Pending(ns, name string, uid types.UID) bool {
	cur, err := m.lister.Pods(ns).Get(name)
	return err == nil && (uid == "" || cur.UID == uid) && Live(cur) && cur.Spec.NodeName == ""
}

// UngatedPending reports whether the informer still shows p (same UID) live, unbound and
// without scheduling gates.
func (m *Members) UngatedPending(p *v1.Pod) bool {
	cur, err := m.lister.Pods(p.Namespace).Get(p.Name)
	return err == nil && cur.UID == p.UID && Live(cur) && cur.Spec.NodeName == "" && len(cur.Spec.SchedulingGates) == 0
}

// LiveUnbound returns the gang's live members without spec.nodeName, except the pod named
// except (empty = none), of the scheduler only (OnlyScheduler).
func (m *Members) LiveUnbound(ns, name, except string) ([]*v1.Pod, error) {
	pods, err := m.List(ns, name)
	if err != nil {
		return nil, err
	}
	out := pods[:0:0]
	for _, p := range pods {
		if Live(p) && p.Spec.NodeName == "" && p.Name != except && m.Ours(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// LiveGangs returns the keys of every gang with at least one live pod.
func (m *Members) LiveGangs() (map[string]struct{}, error) {
	pods, err := m.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]struct{}{}
	for _, p := range pods {
		if key, _, ok := Of(p); ok && Live(p) {
			out[key] = struct{}{}
		}
	}
	return out, nil
}

// Pods lists the pods of one namespace from the scheduler's shared pod informer.
func (m *Members) Pods(ns string) corelisters.PodNamespaceLister { return m.lister.Pods(ns) }

// WrapIndexer replaces the index the gang lists read with wrap(index): tests count or delay
// the lookups through it.
func (m *Members) WrapIndexer(wrap func(cache.Indexer) cache.Indexer) { m.indexer = wrap(m.indexer) }

// GangPending reports whether the gang (namespace/name) still has live unbound members, or
// they cannot be listed.
func (m *Members) GangPending(key string) bool {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pods, err := m.LiveUnbound(ns, name, "")
	return err != nil || len(pods) > 0
}
