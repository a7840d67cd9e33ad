package plan

import (
	"maps"
	"slices"
	"sync"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
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
	// sorted: key → value → the node names sorted, built on demand and dropped when the
	// domain changes; the slices are never modified once built, so callers may keep them.
	sorted map[string]map[string][]string
	// views: key → every domain's sorted names, built on demand and dropped on any change of
	// the key's domains (shared read-only with callers); version counts those changes.
	views   map[string]map[string][]string
	version map[string]uint64
}

func newDomainIndex(lister corelisters.NodeLister, synced func() bool) *domainIndex {
	return &domainIndex{lister: lister, synced: synced, keys: map[string]map[string]map[string]struct{}{},
		sorted: map[string]map[string][]string{}, views: map[string]map[string][]string{}, version: map[string]uint64{}}
}

// watch keeps the index current from the node informer's events.
func (x *domainIndex) watch(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(gang.Changes(x.update))
	return err
}

// update moves a node between domains of every indexed key.
func (x *domainIndex) update(old, cur *v1.Node) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for key, domains := range x.keys {
		if old != nil {
			if v := old.Labels[key]; v != "" && (cur == nil || cur.Labels[key] != v) {
				x.changed(key, v)
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
				if _, in := domains[v][cur.Name]; !in {
					x.changed(key, v)
				}
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

// index adds a key, from the node lister. The listing happens under the lock: a node event
// whose handler runs meanwhile waits and is then applied to the new key, and one handled
// before found no key but is already in the listing. Listed outside the lock, a node updated
// between the listing and the lock stayed stale under the new key until its next event.
func (x *domainIndex) index(key string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.keys[key]; ok {
		return nil
	}
	list, err := x.lister.List(labels.Everything())
	if err != nil {
		return err
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
	x.sorted[key] = map[string][]string{}
	return nil
}

// changed drops the sorted names of one domain and the key's view. Callers hold x.mu.
func (x *domainIndex) changed(key, domain string) {
	delete(x.sorted[key], domain)
	delete(x.views, key)
	x.version[key]++
}

// domainsOf returns every domain of key with its node names sorted, and a version that moves
// whenever they change; ok is false when the index cannot answer yet. The map and the slices
// are shared and read-only.
func (x *domainIndex) domainsOf(key string) (map[string][]string, uint64, bool) {
	if x == nil || x.synced == nil || !x.synced() {
		return nil, 0, false
	}
	x.mu.RLock()
	view, built := x.views[key]
	version := x.version[key]
	_, indexed := x.keys[key]
	x.mu.RUnlock()
	if built {
		return view, version, true
	}
	if !indexed {
		if err := x.index(key); err != nil {
			return nil, 0, false
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	sorted := x.sorted[key]
	view = make(map[string][]string, len(x.keys[key]))
	for d, set := range x.keys[key] {
		names, ok := sorted[d]
		if !ok {
			names = slices.Sorted(maps.Keys(set))
			sorted[d] = names
		}
		view[d] = names
	}
	x.views[key] = view
	return view, x.version[key], true
}

// nodesOfDomain returns the snapshot nodes whose label key has value domain: from the index
// when it can answer (each node checked against the snapshot's labels, which the cycle plans
// with), else by scanning the snapshot.
func (p *cycle) nodesOfDomain(key, domain string) []fwk.NodeInfo {
	if domain == "" {
		return nil
	}
	var out []fwk.NodeInfo
	if names, ok := p.pl.domains.nodes(key, domain); ok {
		lister := p.pl.nodes()
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
