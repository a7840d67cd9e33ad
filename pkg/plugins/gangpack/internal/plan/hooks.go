package plan

import (
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Hooks for tests, benchmarks and simulations that run the planner without informers.

// IndexNodes replaces the domain index with a synced one over nodes, as the node informer
// would feed it.
func (pl *Planner) IndexNodes(nodes []*v1.Node) error {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	x := newDomainIndex(corelisters.NewNodeLister(indexer), func() bool { return true })
	for _, n := range nodes {
		if err := indexer.Add(n); err != nil {
			return err
		}
		x.update(nil, n)
	}
	pl.domains = x
	return nil
}

// NodeChanged feeds one node event (nil old: added; nil cur: deleted) to the domain index.
func (pl *Planner) NodeChanged(old, cur *v1.Node) { pl.domains.update(old, cur) }

// WithoutPlanCache turns the plan cache off, and gives the device room cache a fresh one,
// until restore is called: a planning from scratch.
func (pl *Planner) WithoutPlanCache() (restore func()) {
	plans, rooms := pl.plans, pl.rooms
	pl.plans, pl.rooms = nil, devices.NewRoomCache()
	return func() { pl.plans, pl.rooms = plans, rooms }
}

// ResetPlanCache empties the plan cache.
func (pl *Planner) ResetPlanCache() { pl.plans = newPlanCache() }

// ResetRoomCache empties the device room cache.
func (pl *Planner) ResetRoomCache() { pl.rooms = devices.NewRoomCache() }

// SetShapeCap sets how many distinct member shapes one planning works with (benchmarks
// compare the cap with none) and returns what restores it.
func SetShapeCap(n int) (restore func()) {
	old := maxShapes
	maxShapes = n
	return func() { maxShapes = old }
}
