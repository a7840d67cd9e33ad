package gangpack

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// domainIndex maps each topology key planning has asked for to its domains and their node
// names, and keeps that current from node events: a pinned member plans its domain without
// reading every node's labels (at 5,000 nodes that scan was most of a pinned PreFilter). A key
// is indexed from the node lister the first time it is asked for; until the node informer
// has synced, callers scan the snapshot instead.
type domainIndex struct {
	mu     sync.RWMutex
	lister corelisters.NodeLister
	synced func() bool
	keys   map[string]map[string]map[string]struct{} // key → value → node names
}

func newDomainIndex(lister corelisters.NodeLister, synced func() bool) *domainIndex {
	return &domainIndex{lister: lister, synced: synced, keys: map[string]map[string]map[string]struct{}{}}
}

// watch keeps the index current from the node informer's events.
func (x *domainIndex) watch(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.update(nil, asNode(obj)) },
		UpdateFunc: func(old, cur any) { x.update(asNode(old), asNode(cur)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			x.update(asNode(obj), nil)
		},
	})
	return err
}

func asNode(obj any) *v1.Node {
	n, _ := obj.(*v1.Node)
	return n
}

// update moves a node between domains of every indexed key.
func (x *domainIndex) update(old, cur *v1.Node) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for key, domains := range x.keys {
		if old != nil {
			if v := old.Labels[key]; v != "" && (cur == nil || cur.Labels[key] != v) {
				if set := domains[v]; set != nil {
					delete(set, old.Name)
					if len(set) == 0 {
						delete(domains, v)
					}
				}
			}
		}
		if cur != nil {
			if v := cur.Labels[key]; v != "" {
				if domains[v] == nil {
					domains[v] = map[string]struct{}{}
				}
				domains[v][cur.Name] = struct{}{}
			}
		}
	}
}

// nodes returns the names of the nodes whose label key has value domain; ok is false when the
// index cannot answer yet (informer not synced).
func (x *domainIndex) nodes(key, domain string) ([]string, bool) {
	if x == nil || x.synced == nil || !x.synced() {
		return nil, false
	}
	x.mu.RLock()
	domains, indexed := x.keys[key]
	if indexed {
		out := make([]string, 0, len(domains[domain]))
		for n := range domains[domain] {
			out = append(out, n)
		}
		x.mu.RUnlock()
		return out, true
	}
	x.mu.RUnlock()
	if err := x.index(key); err != nil {
		return nil, false
	}
	return x.nodes(key, domain)
}

// index adds a key, from the node lister.
func (x *domainIndex) index(key string) error {
	list, err := x.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.keys[key]; ok {
		return nil
	}
	domains := map[string]map[string]struct{}{}
	for _, n := range list {
		if v := n.Labels[key]; v != "" {
			if domains[v] == nil {
				domains[v] = map[string]struct{}{}
			}
			domains[v][n.Name] = struct{}{}
		}
	}
	x.keys[key] = domains
	return nil
}

// nodesOfDomain returns the snapshot nodes whose label key has value domain: from the index
// when it can answer (each node checked against the snapshot's labels, which the cycle plans
// with), else by scanning the snapshot.
func (p *planner) nodesOfDomain(key, domain string) []fwk.NodeInfo {
	if domain == "" {
		return nil
	}
	var out []fwk.NodeInfo
	if names, ok := p.pl.domains.nodes(key, domain); ok {
		lister := p.pl.handle.SnapshotSharedLister().NodeInfos()
		for _, name := range names {
			if ni, err := lister.Get(name); err == nil && ni.Node() != nil && ni.Node().Labels[key] == domain {
				out = append(out, ni)
			}
		}
		return out
	}
	for _, ni := range p.all {
		if n := ni.Node(); n != nil && n.Labels[key] == domain {
			out = append(out, ni)
		}
	}
	return out
}
