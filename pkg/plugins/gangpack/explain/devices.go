package explain

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// DRA is what explain reads of Dynamic Resource Allocation, to count devices in member room
// as the scheduler does (docs/design.md §3.1): the devices drivers publish, the classes, the
// claims (their allocations occupy devices) and the claim templates members take claims
// from. A Cluster without it plans without devices.
type DRA struct {
	Slices    []*resourceapi.ResourceSlice
	Classes   []*resourceapi.DeviceClass
	Claims    []*resourceapi.ResourceClaim
	Templates []*resourceapi.ResourceClaimTemplate

	held sets.Set[structured.DeviceID] // heldDevices, computed once
}

// devicesOf returns the planner's view of d (nil for nil d). The allocated devices are those
// of the claims' allocations; allocations the scheduler has in flight (members waiting at
// Permit) are not in the API yet, so their devices count as free here.
func devicesOf(d *DRA) plan.Devices {
	if d == nil {
		return nil
	}
	f := devices.DefaultFeatures()
	allocated := heldDevices(d)
	state := structured.AllocatedState{AllocatedDevices: allocated, AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	return &clusterDevices{d: d, in: devices.NewInputs(f, state, devices.ClassesOf(d.Classes), d.Slices, devices.NewCELCache(f))}
}

type clusterDevices struct {
	d  *DRA
	in *devices.Inputs
}

func (c *clusterDevices) Claims(pod *v1.Pod) (member, shared []*resourceapi.ResourceClaim, err error) {
	return devices.MemberClaims(pod, func(ns, name string) (*resourceapi.ResourceClaimTemplate, error) {
		for _, t := range c.d.Templates {
			if t.Namespace == ns && t.Name == name {
				return t, nil
			}
		}
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaimtemplates"), name)
	}, c.claim)
}

func (c *clusterDevices) Used(pod *v1.Pod) []*resourceapi.ResourceClaim {
	return devices.PodClaims(pod, c.claim)
}

// claim returns a claim of the cluster by namespace and name.
func (c *clusterDevices) claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	for _, cl := range c.d.Claims {
		if cl.Namespace == ns && cl.Name == name {
			return cl, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
}

func (c *clusterDevices) View(context.Context) (*devices.Inputs, error) { return c.in, nil }

// Seq and ChangedSince: one explanation reads the devices once; nothing is cached across.
func (c *clusterDevices) Seq() uint64 { return 0 }

func (c *clusterDevices) ChangedSince(string, uint64) bool { return true }

func (c *clusterDevices) Last(string) (uint64, bool) { return 0, false }

func (c *clusterDevices) Settled(string) bool { return true }

// heldDevices is the devices d's claims' allocations hold (admin access holds none), as the
// planner counts them, computed once per d (its claims are not changed after it is read);
// nil for nil d.
func heldDevices(d *DRA) sets.Set[structured.DeviceID] {
	if d == nil {
		return nil
	}
	if d.held == nil {
		d.held = sets.New(devices.HeldBy(d.Claims)...)
	}
	return d.held
}

// freeDevices counts the devices d's node-local slices publish on nodes, less those held
// (heldDevices), per driver; nil when there are none.
func freeDevices(d *DRA, held sets.Set[structured.DeviceID], nodes []string) map[string]int {
	if d == nil || len(d.Slices) == 0 {
		return nil
	}
	in := sets.New(nodes...)
	var out map[string]int
	for _, s := range d.Slices {
		if s.Spec.NodeName == nil || !in.Has(*s.Spec.NodeName) {
			continue
		}
		for _, dev := range s.Spec.Devices {
			if held.Has(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, dev.Name)) {
				continue
			}
			if out == nil {
				out = map[string]int{}
			}
			out[s.Spec.Driver]++
		}
	}
	return out
}
