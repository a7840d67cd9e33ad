package devices

import (
	"sync"
	"sync/atomic"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
)

// Changes records when each node's devices last changed, as numbers of one increasing
// sequence, from the events of the objects a device view is built from: ResourceSlices (the
// node a slice names; a slice that names none may concern any node), ResourceClaims whose
// allocation changes (the nodes of the allocated devices' pools) and DeviceClasses (any
// node). A view read after Seq returned s reflects every change numbered s or less, so an
// answer computed from it stays true for a node while ChangedSince(node, s) is false.
//
// What no event tells is covered elsewhere: kube-scheduler's allocations in flight (between
// its DynamicResources plugin's Reserve and the claim's update) come and go with the pod
// assumed on or forgotten from the node, which moves the node's NodeInfo generation. Device
// taint rules (DRADeviceTaints, alpha and off in 1.35) are not followed.
//
// Safe for concurrent use.
type Changes struct {
	// Clock is when changes are recorded and Settled asks (time.Now; tests set their own).
	Clock func() time.Time

	seq atomic.Uint64

	mu     sync.RWMutex
	global uint64            // the last change that may concern any node
	nodes  map[string]uint64 // node → its last change
	pools  map[poolID]string // a pool's node; "" for a pool that is not one node's
	shared bool              // a slice for no single node was seen (Last)
	// globalAt and at are when the last change concerning every node, and each node's, was
	// recorded (Settled).
	globalAt time.Time
	at       map[string]time.Time
}

type poolID struct{ driver, pool string }

// NewChanges returns a record with no change.
func NewChanges() *Changes {
	return &Changes{nodes: map[string]uint64{}, pools: map[poolID]string{}, at: map[string]time.Time{}, Clock: time.Now}
}

// Seq returns the number of the last change.
func (c *Changes) Seq() uint64 { return c.seq.Load() }

// ChangedSince reports whether node's devices may have changed after change number seq.
func (c *Changes) ChangedSince(node string, seq uint64) bool {
	if c.seq.Load() == seq {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.global > seq || c.nodes[node] > seq
}

// Last returns the number of the last change that concerns node's devices, and ok false when
// some slice is for no single node (nodeSelector, allNodes, a pool on several nodes): then
// an allocation in flight on another node may take devices node sees, which no number of
// node's follows, and callers must read the devices themselves (RoomCache.Room).
func (c *Changes) Last(node string) (last uint64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shared {
		return 0, false
	}
	return max(c.global, c.nodes[node]), true
}

// settleWindow is how long after a node's device change its answers are not kept by stamp:
// the informer delivers a claim's update to each of its listeners in turn, so the DRA
// manager's allocated devices may follow this record's number a moment later, and a view read
// in between would be kept under a change it does not reflect.
const settleWindow = 2 * time.Second

// Settled reports whether node's last device change (or the last change concerning every
// node) is older than settleWindow.
func (c *Changes) Settled(node string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	now := c.Clock()
	return now.Sub(c.globalAt) > settleWindow && now.Sub(c.at[node]) > settleWindow
}

// next numbers a change; callers hold c.mu.
func (c *Changes) next() uint64 { return c.seq.Add(1) }

// Slice records a slice added, changed (old and new) or removed (new nil).
func (c *Changes) Slice(old, new *resourceapi.ResourceSlice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.next()
	for _, s := range []*resourceapi.ResourceSlice{old, new} {
		if s == nil {
			continue
		}
		id := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			c.global, c.pools[id], c.shared, c.globalAt = n, "", true, c.Clock()
			continue
		}
		node := *s.Spec.NodeName
		c.nodes[node], c.at[node] = n, c.Clock()
		if prev, ok := c.pools[id]; !ok || prev == node {
			c.pools[id] = node
		} else {
			c.pools[id], c.shared = "", true // one pool on several nodes: any of them
		}
	}
}

// Claim records a claim added, changed or removed (new nil) when its allocation changed: the
// nodes of its allocated devices' pools (any node for a pool no slice places on one node).
func (c *Changes) Claim(old, new *resourceapi.ResourceClaim) {
	var oa, na *resourceapi.AllocationResult
	if old != nil {
		oa = old.Status.Allocation
	}
	if new != nil {
		na = new.Status.Allocation
	}
	if oa == nil && na == nil || apiequality.Semantic.DeepEqual(oa, na) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.next()
	for _, a := range []*resourceapi.AllocationResult{oa, na} {
		if a == nil {
			continue
		}
		for _, r := range a.Devices.Results {
			if node := c.pools[poolID{r.Driver, r.Pool}]; node != "" {
				c.nodes[node], c.at[node] = n, c.Clock()
			} else {
				c.global, c.globalAt = n, c.Clock()
			}
		}
	}
}

// Class records a device class added, changed or removed.
func (c *Changes) Class() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.global, c.globalAt = c.next(), c.Clock()
}

// SliceHandler, ClaimHandler and ClassHandler feed the record from informers.
func (c *Changes) SliceHandler() cache.ResourceEventHandler {
	return handler(c.Slice)
}

func (c *Changes) ClaimHandler() cache.ResourceEventHandler {
	return handler(c.Claim)
}

func (c *Changes) ClassHandler() cache.ResourceEventHandler {
	return handler(func(_, _ *resourceapi.DeviceClass) { c.Class() })
}

// handler adapts f(old, new) (new nil on delete) to an informer's events.
func handler[T any](f func(old, new *T)) cache.ResourceEventHandler {
	as := func(obj any) *T {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		t, _ := obj.(*T)
		return t
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f(nil, as(obj)) },
		UpdateFunc: func(old, new any) { f(as(old), as(new)) },
		DeleteFunc: func(obj any) { f(as(obj), nil) },
	}
}
