// Package devices answers "how many members of this shape fit on this node" for the
// DRA devices a member claims, by asking kube-scheduler's own structured allocator
// (k8s.io/dynamic-resource-allocation/structured), the one the in-tree
// DynamicResources plugin uses. It does not re-implement device matching: CEL
// selectors, device classes, constraints, counters and taints are the allocator's.
//
// Inputs is built once per planning cycle and shared (read-only) across nodes and
// goroutines; Room is called per node.
package devices

import (
	"context"
	"fmt"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// Inputs is what the allocator needs, gathered once per planning cycle. Treat it as
// read-only once built: Room never modifies it and may run concurrently on it.
type Inputs struct {
	// Features selects the allocator implementation (stable, incubating,
	// experimental), as the in-tree plugin does with AllocatorFeatures.
	Features structured.Features
	// Allocated is the cluster's allocated state: devices held by allocated claims,
	// including in-flight allocations, as the framework's claim tracker reports them.
	Allocated structured.AllocatedState
	// Classes resolves DeviceClass names (the framework's DeviceClassLister
	// satisfies it).
	Classes structured.DeviceClassLister
	// CEL caches compiled selectors across calls.
	CEL *cel.Cache
	// ProbeBudget bounds each joint-allocation probe Room makes above its greedy
	// count; zero or negative means no probe (greedy only). See Room.
	ProbeBudget time.Duration

	// byNode holds the slices published for one node (spec.nodeName); shared holds
	// every other slice (nodeSelector, allNodes, perDeviceNodeSelection), which the
	// allocator matches against each node itself.
	byNode map[string][]*resourceapi.ResourceSlice
	shared []*resourceapi.ResourceSlice
	// allocatedByPool indexes Allocated.AllocatedDevices by pool so that a node's
	// view copies only the devices of the pools it sees.
	allocatedByPool map[poolKey][]structured.DeviceID
	// classTok names the device classes and their versions (classToken), computed once.
	classOnce sync.Once
	classTok  string
}

type poolKey struct{ driver, pool string }

// NewCELCache returns a cache sized like the in-tree plugin's (10 entries).
func NewCELCache(f structured.Features) *cel.Cache {
	return cel.NewCache(10, cel.Features{EnableConsumableCapacity: f.ConsumableCapacity})
}

// DefaultFeatures derives the allocator features from the process's feature gates,
// exactly as the in-tree DynamicResources plugin does.
func DefaultFeatures() structured.Features {
	return dynamicresources.AllocatorFeatures(feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
}

// NewInputs indexes slices by node and allocated devices by pool. A nil cache gets
// a fresh one. The AllocatedState's sets may be nil.
func NewInputs(f structured.Features, allocated structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, cache *cel.Cache) *Inputs {
	if cache == nil {
		cache = NewCELCache(f)
	}
	in := &Inputs{
		Features:        f,
		Allocated:       allocated,
		Classes:         classes,
		CEL:             cache,
		byNode:          make(map[string][]*resourceapi.ResourceSlice),
		allocatedByPool: make(map[poolKey][]structured.DeviceID),
	}
	for _, s := range slices {
		if s == nil {
			continue
		}
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			in.byNode[*s.Spec.NodeName] = append(in.byNode[*s.Spec.NodeName], s)
		} else {
			in.shared = append(in.shared, s)
		}
	}
	for id := range allocated.AllocatedDevices {
		k := poolKey{id.Driver.String(), id.Pool.String()}
		in.allocatedByPool[k] = append(in.allocatedByPool[k], id)
	}
	return in
}

// gatherAttempts bounds the retries of a claim-tracker read that raced with an
// informer update (the in-tree plugin polls for up to 5s on that error).
const gatherAttempts = 5

// FromManager builds Inputs from the framework's SharedDRAManager the way the
// in-tree plugin's PreFilter does: allocated devices (informer state plus in-flight
// allocations) from the claim tracker, slices with device taint rules applied,
// the manager's class lister. A read that races with an informer update is
// retried a few times; the tracker's conflict error is not exported, so any error
// is retried and the last one returned.
func FromManager(ctx context.Context, m fwk.SharedDRAManager, f structured.Features, cache *cel.Cache) (*Inputs, error) {
	if m == nil {
		return nil, fmt.Errorf("no SharedDRAManager (DynamicResourceAllocation disabled?)")
	}
	state, err := gatherAllocated(ctx, m.ResourceClaims(), f)
	if err != nil {
		return nil, fmt.Errorf("gather allocated devices: %w", err)
	}
	slices, err := m.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, fmt.Errorf("list resource slices: %w", err)
	}
	return NewInputs(f, state, m.DeviceClasses(), slices, cache), nil
}

func gatherAllocated(ctx context.Context, t fwk.ResourceClaimTracker, f structured.Features) (structured.AllocatedState, error) {
	var err error
	for i := 0; i < gatherAttempts; i++ {
		if ctx.Err() != nil {
			return structured.AllocatedState{}, ctx.Err()
		}
		if f.ConsumableCapacity {
			var s *structured.AllocatedState
			if s, err = t.GatherAllocatedState(); err == nil && s != nil {
				return *s, nil
			}
			if err == nil {
				err = fmt.Errorf("nil allocated state")
			}
			continue
		}
		var ids sets.Set[structured.DeviceID]
		if ids, err = t.ListAllAllocatedDevices(); err == nil {
			return structured.AllocatedState{
				AllocatedDevices:         ids,
				AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
				AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
			}, nil
		}
	}
	return structured.AllocatedState{}, err
}

// nodeView is what one node's allocation sees: its own slices plus the
// node-independent ones, and a private copy of the allocated devices of those
// slices' pools, which Room may extend while it searches.
type nodeView struct {
	slices    []*resourceapi.ResourceSlice
	allocated sets.Set[structured.DeviceID]
}

func (in *Inputs) view(nodeName string) nodeView {
	own := in.byNode[nodeName]
	v := nodeView{slices: make([]*resourceapi.ResourceSlice, 0, len(own)+len(in.shared))}
	v.slices = append(append(v.slices, own...), in.shared...)
	seen := make(map[poolKey]bool, 2)
	v.allocated = sets.New[structured.DeviceID]()
	for _, s := range v.slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		v.allocated.Insert(in.allocatedByPool[k]...)
	}
	return v
}

// allocator builds a structured allocator over the view, with extra devices (those
// an earlier search step placed) counted as allocated. The stable and incubating
// allocators are cheap to build (a struct); building one per step keeps their
// per-Allocator counter cache consistent with the allocated set.
func (in *Inputs) allocator(ctx context.Context, v nodeView) (structured.Allocator, error) {
	state := in.Allocated
	state.AllocatedDevices = v.allocated
	return structured.NewAllocator(ctx, in.Features, state, in.Classes, v.slices, in.CEL)
}

// Without returns the inputs with the devices ids given back (not allocated): what the cluster
// looks like once the pods holding them are gone. in itself is not changed.
func (in *Inputs) Without(ids []structured.DeviceID) *Inputs {
	if len(ids) == 0 {
		return in
	}
	gone := sets.New(ids...)
	out := &Inputs{Features: in.Features, Allocated: in.Allocated, Classes: in.Classes, CEL: in.CEL, ProbeBudget: in.ProbeBudget,
		byNode: in.byNode, shared: in.shared, allocatedByPool: make(map[poolKey][]structured.DeviceID, len(in.allocatedByPool))}
	for k, held := range in.allocatedByPool {
		for _, id := range held {
			if !gone.Has(id) {
				out.allocatedByPool[k] = append(out.allocatedByPool[k], id)
			}
		}
	}
	return out
}

// HeldBy returns the devices the claims' allocations hold (admin-access results are not
// held).
func HeldBy(claims []*resourceapi.ResourceClaim) []structured.DeviceID {
	var out []structured.DeviceID
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess == nil || !*r.AdminAccess {
				out = append(out, structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
			}
		}
	}
	return out
}
