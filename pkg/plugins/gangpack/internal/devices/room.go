package devices

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/structured"
)

// ErrMissingDeviceClass is matched (errors.Is) by a *MissingClassError.
var ErrMissingDeviceClass = errors.New("device class does not exist")

// MissingClassError names a claim request whose DeviceClass does not exist. No
// node can satisfy such a claim until the class is created.
type MissingClassError struct {
	Claim, Request, Class string
}

func (e *MissingClassError) Error() string {
	return fmt.Sprintf("claim %s, request %s: device class %q does not exist", e.Claim, e.Request, e.Class)
}

func (e *MissingClassError) Is(target error) bool { return target == ErrMissingDeviceClass }

// Room returns how many members (0..limit) fit on node, counting DRA devices only.
// claims are one member's claims, unallocated (see MemberClaims); every member gets
// its own copy. shared are claims all members reference; an unallocated shared
// claim is allocated once, on this node, together with the members; an allocated
// one only has to be usable here (its allocation's node selector matches node).
//
// The count is found with the structured allocator: first greedily, one member at
// a time, each member's devices then counted as allocated; then, if
// in.ProbeBudget > 0, by allocating k copies jointly for k above the greedy count
// until one fails or runs out of budget (joint allocation can backtrack across
// members, which matters when request selectors overlap). Success is monotone in k.
//
// An error means bad input (a missing class, a CEL error, a nil claim): no node
// would do better. Allocation failing on this node is not an error: it is room 0.
func Room(ctx context.Context, in *Inputs, node *v1.Node, claims, shared []*resourceapi.ResourceClaim, limit int) (int, error) {
	return RoomWith(ctx, in, node, nil, claims, shared, limit)
}

// Hold is room another gang reserves on a node: Count members, each with its own copy of
// Claims (unallocated per-member claims).
type Hold struct {
	Claims []*resourceapi.ResourceClaim
	Count  int
}

// RoomWith is Room on the devices left once the holds are allocated on the node (other
// forming gangs' reserved members): a node whose devices cannot take the holds has room 0.
// There is no joint probe with holds.
func RoomWith(ctx context.Context, in *Inputs, node *v1.Node, holds []Hold, claims, shared []*resourceapi.ResourceClaim, limit int) (int, error) {
	if in == nil || node == nil {
		return 0, errors.New("devices.Room: nil inputs or node")
	}
	if limit <= 0 {
		return 0, nil
	}
	if err := in.checkClaims(claims, shared); err != nil {
		return 0, err
	}
	ok, err := sharedAllocatedHere(node, shared)
	if !ok || err != nil {
		return 0, err
	}
	first := append(unallocated(shared), claims...)
	if !hasRequests(first) {
		return limit, nil
	}
	v := in.view(node.Name)
	if len(v.slices) == 0 {
		return 0, nil
	}
	if ok, err := in.hold(ctx, node, v, holds); !ok || err != nil {
		return 0, err
	}
	g, err := in.greedy(ctx, node, v, first, claims, limit)
	if err != nil || g == 0 || g == limit || in.ProbeBudget <= 0 || !hasRequests(claims) || len(holds) > 0 {
		return g, err
	}
	return in.probe(ctx, node, first, claims, g, limit)
}

// greedy places members one after the other; the first step also places the
// unallocated shared claims. It returns how many steps succeeded.
func (in *Inputs) greedy(ctx context.Context, node *v1.Node, v nodeView, first, claims []*resourceapi.ResourceClaim, limit int) (int, error) {
	if !hasRequests(claims) {
		// Members need no devices of their own: only the shared claims decide.
		if ok, _, err := in.allocate(ctx, node, v, first); !ok || err != nil {
			return 0, err
		}
		return limit, nil
	}
	batch := first
	for n := 0; n < limit; n++ {
		ok, res, err := in.allocate(ctx, node, v, batch)
		if !ok || err != nil {
			return n, err
		}
		take(v, res)
		batch = claims
	}
	return limit, nil
}

// hold allocates the holds' members on the view, one member at a time, adding their devices
// to v's allocated set; false when they do not all fit.
func (in *Inputs) hold(ctx context.Context, node *v1.Node, v nodeView, holds []Hold) (bool, error) {
	for _, h := range holds {
		if !hasRequests(h.Claims) {
			continue
		}
		for n := 0; n < h.Count; n++ {
			ok, res, err := in.allocate(ctx, node, v, h.Claims)
			if !ok || err != nil {
				return false, err
			}
			take(v, res)
		}
	}
	return true, nil
}

// take counts the devices of allocation results as allocated in v.
func take(v nodeView, res []resourceapi.AllocationResult) {
	for i := range res {
		for _, r := range res[i].Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			// A share of a consumable-capacity device counts as the whole device here:
			// conservative, the next member may get less room than it has.
			v.allocated.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
		}
	}
}

// probe tries k = g+1, g+2, ... copies of claims allocated jointly (with the
// unallocated shared claims), each attempt bounded by in.ProbeBudget, and returns
// the largest k that succeeded (g if none did).
func (in *Inputs) probe(ctx context.Context, node *v1.Node, first, claims []*resourceapi.ResourceClaim, g, limit int) (int, error) {
	batch := append([]*resourceapi.ResourceClaim(nil), first...)
	for i := 1; i < g; i++ {
		batch = append(batch, claims...)
	}
	for k := g + 1; k <= limit; k++ {
		batch = append(batch, claims...)
		pctx, cancel := context.WithTimeout(ctx, in.ProbeBudget)
		ok, _, err := in.allocate(pctx, node, in.view(node.Name), batch)
		cancel()
		if ctx.Err() != nil {
			return k - 1, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return k - 1, nil
		}
		if !ok || err != nil {
			return k - 1, err
		}
	}
	return limit, nil
}

// allocate runs one allocation on the view. Failure on this node (no solution,
// invalid pools) is (false, nil, nil); other errors are returned.
func (in *Inputs) allocate(ctx context.Context, node *v1.Node, v nodeView, batch []*resourceapi.ResourceClaim) (bool, []resourceapi.AllocationResult, error) {
	a, err := in.allocator(ctx, v)
	if err != nil {
		return false, nil, err
	}
	res, err := a.Allocate(ctx, node, batch)
	switch {
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return false, nil, nil
	case err != nil:
		return false, nil, err
	case len(res) != len(batch):
		return false, nil, nil
	}
	return true, res, nil
}

// checkClaims rejects nil claims and allocated per-member claims, and resolves
// every device class that unallocated claims name, so that a missing class is a
// *MissingClassError rather than a message from deep in the allocator.
func (in *Inputs) checkClaims(claims, shared []*resourceapi.ResourceClaim) error {
	if in.Classes == nil {
		return errors.New("devices.Room: Inputs without a DeviceClassLister")
	}
	for _, c := range claims {
		if c == nil {
			return errors.New("devices.Room: nil per-member claim")
		}
		if c.Status.Allocation != nil {
			return fmt.Errorf("devices.Room: per-member claim %s/%s is already allocated", c.Namespace, c.Name)
		}
	}
	for _, c := range shared {
		if c == nil {
			return errors.New("devices.Room: nil shared claim")
		}
	}
	for _, c := range append(unallocated(shared), claims...) {
		for _, r := range c.Spec.Devices.Requests {
			if err := in.checkRequest(c, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *Inputs) checkRequest(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequest) error {
	switch {
	case r.Exactly != nil:
		return in.checkClass(c, r.Name, r.Exactly.DeviceClassName)
	case len(r.FirstAvailable) > 0:
		for _, s := range r.FirstAvailable {
			if err := in.checkClass(c, r.Name+"/"+s.Name, s.DeviceClassName); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("claim %s/%s, request %s: neither exactly nor firstAvailable is set", c.Namespace, c.Name, r.Name)
}

func (in *Inputs) checkClass(c *resourceapi.ResourceClaim, request, class string) error {
	name := c.Namespace + "/" + c.Name
	if class == "" {
		return fmt.Errorf("claim %s, request %s: no device class", name, request)
	}
	dc, err := in.Classes.Get(class)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && dc == nil):
		return &MissingClassError{Claim: name, Request: request, Class: class}
	case err != nil:
		return fmt.Errorf("claim %s, request %s: device class %q: %w", name, request, class, err)
	}
	return nil
}

// sharedAllocatedHere reports whether every allocated shared claim can be used on
// node: its allocation carries no node selector, or one that matches node.
func sharedAllocatedHere(node *v1.Node, shared []*resourceapi.ResourceClaim) (bool, error) {
	for _, c := range shared {
		a := c.Status.Allocation
		if a == nil || a.NodeSelector == nil {
			continue
		}
		sel, err := nodeaffinity.NewNodeSelector(a.NodeSelector)
		if err != nil {
			return false, fmt.Errorf("shared claim %s/%s: allocation node selector: %w", c.Namespace, c.Name, err)
		}
		if !sel.Match(node) {
			return false, nil
		}
	}
	return true, nil
}

func unallocated(cs []*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, 0, len(cs))
	for _, c := range cs {
		if c != nil && c.Status.Allocation == nil {
			out = append(out, c)
		}
	}
	return out
}

func hasRequests(cs []*resourceapi.ResourceClaim) bool {
	for _, c := range cs {
		if len(c.Spec.Devices.Requests) > 0 {
			return true
		}
	}
	return false
}

// ProbeBudgetDefault is a suggested Inputs.ProbeBudget: a joint probe that fails
// searches every assignment of the node's free devices to the members, which grows
// factorially with the devices per node, so it must be bounded.
const ProbeBudgetDefault = 2 * time.Millisecond
