package gangpack

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// draDevices is what planning reads of DRA (plan.Devices): the claims of a template pod's
// members, from the ResourceClaimTemplates the plugin watches and the claims the framework's
// shared DRA manager tracks, and a view of the devices as the DynamicResources plugin sees
// them (slices, classes, allocated devices and allocations in flight).
type draDevices struct {
	manager   fwk.SharedDRAManager
	templates resourcelisters.ResourceClaimTemplateLister
	synced    func() bool // the template informer has listed once
	// firstWait lets the first planning that needs templates wait for the informer's first
	// list (at most templateSyncWait), so that gangs created as the scheduler starts do not
	// park for want of it; later plannings do not wait.
	firstWait sync.Once
	features  structured.Features
	cel       *cel.Cache
	// changes follows the slices, claims and classes the manager's view is built from, so
	// that planning recounts a node's device room only when its devices changed.
	changes *devices.Changes
}

// newDRADevices returns the plugin's plan.Devices, nil when the framework has no shared DRA
// manager (the DynamicResourceAllocation feature off): device room is then not counted.
//
// The templates come from an informer of the plugin's own, started here, not from the
// scheduler's shared factory: kube-scheduler waits for every informer of that factory to
// sync before it schedules anything, so a scheduler without read access to
// resourceclaimtemplates (RBAC not updated) would schedule nothing at all. With its own
// informer only the gangs whose members use claim templates wait, with a reason that says so.
// Without a client configuration (unit tests) the shared factory's informer is used.
func newDRADevices(ctx context.Context, h fwk.Handle) plan.Devices {
	m := h.SharedDRAManager()
	if m == nil {
		return nil
	}
	f := devices.DefaultFeatures()
	d := &draDevices{manager: m, features: f, cel: devices.NewCELCache(f), changes: devices.NewChanges()}
	d.follow(h.SharedInformerFactory())
	if h.KubeConfig() != nil && h.ClientSet() != nil {
		factory := informers.NewSharedInformerFactory(h.ClientSet(), 0)
		inf := factory.Resource().V1().ResourceClaimTemplates()
		d.templates, d.synced = inf.Lister(), inf.Informer().HasSynced
		factory.Start(ctx.Done())
		return d
	}
	inf := h.SharedInformerFactory().Resource().V1().ResourceClaimTemplates()
	d.templates, d.synced = inf.Lister(), func() bool { return true }
	return d
}

// templateSyncWait bounds the first planning's wait for the template informer.
const templateSyncWait = 5 * time.Second

// errTemplatesUnread is the reason a gang whose members use claim templates waits while the
// template informer has not listed them.
var errTemplatesUnread = errors.New("ResourceClaimTemplates are not readable yet: the scheduler needs get, list and watch on resource.k8s.io resourceclaimtemplates")

func (d *draDevices) Claims(pod *v1.Pod) (member, shared []*resourceapi.ResourceClaim, err error) {
	return devices.MemberClaims(pod, func(ns, name string) (*resourceapi.ResourceClaimTemplate, error) {
		d.firstWait.Do(func() {
			_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, templateSyncWait, true,
				func(context.Context) (bool, error) { return d.synced(), nil })
		})
		if !d.synced() {
			return nil, errTemplatesUnread
		}
		return d.templates.ResourceClaimTemplates(ns).Get(name)
	}, d.manager.ResourceClaims().Get)
}

// follow feeds d.changes from the shared factory's informers of the objects the DRA manager
// reads (the DynamicResources plugin has them already: no new watch).
func (d *draDevices) follow(f informers.SharedInformerFactory) {
	if f == nil {
		return
	}
	r := f.Resource().V1()
	for _, reg := range []struct {
		inf interface {
			AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
		}
		h cache.ResourceEventHandler
	}{
		{r.ResourceSlices().Informer(), d.changes.SliceHandler()},
		{r.ResourceClaims().Informer(), d.changes.ClaimHandler()},
		{r.DeviceClasses().Informer(), d.changes.ClassHandler()},
	} {
		_, _ = reg.inf.AddEventHandler(reg.h) // fails only on a stopped informer
	}
}

func (d *draDevices) Seq() uint64 { return d.changes.Seq() }

func (d *draDevices) ChangedSince(node string, s uint64) bool { return d.changes.ChangedSince(node, s) }

func (d *draDevices) Last(node string) (uint64, bool) { return d.changes.Last(node) }

func (d *draDevices) Settled(node string) bool { return d.changes.Settled(node) }

func (d *draDevices) Used(pod *v1.Pod) []*resourceapi.ResourceClaim {
	return devices.PodClaims(pod, d.manager.ResourceClaims().Get)
}

func (d *draDevices) View(ctx context.Context) (*devices.Inputs, error) {
	return devices.FromManager(ctx, d.manager, d.features, d.cel)
}

// podDevices is what Filter needs to check a pod's claims against the devices other forming
// gangs reserve: built once per cycle, on the first node that needs it (Filter runs in
// parallel over the nodes).
type podDevices struct {
	once           sync.Once
	in             *devices.Inputs
	member, shared []*resourceapi.ResourceClaim
	err            error
}

// filterDevices refuses a node where the pod's DRA claims do not fit the devices left once
// the forming gangs reserving room there have their members' devices set aside (HoldsOn):
// kube-scheduler's DynamicResources filter would otherwise give a reserved member's devices
// to the pod. nil when the pod has no claims or no such gang holds devices there.
func (pl *GangPack) filterDevices(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node *v1.Node, gangs []string, own string) *fwk.Status {
	if pl.dra == nil || len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	holds := pl.planner.HoldsOn(node.Name, gangs, own)
	if len(holds) == 0 {
		return nil
	}
	s, ok := gang.ReadState[*requestState](cs, requestStateKey)
	if !ok || s.dev == nil {
		return nil
	}
	s.dev.once.Do(func() {
		if s.dev.member, s.dev.shared, s.dev.err = pl.dra.Claims(pod); s.dev.err == nil {
			s.dev.in, s.dev.err = pl.dra.View(ctx)
		}
	})
	if s.dev.err != nil {
		return nil // the DynamicResources filter reports bad claims; nothing reserved is at stake
	}
	room, err := devices.RoomWith(ctx, s.dev.in, node, holds, s.dev.member, s.dev.shared, 1)
	if err != nil || room > 0 {
		return nil
	}
	klog.FromContext(ctx).V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "devices_reserved", "heldBy", gangs)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.NodeReserved)
}

// draEvents are the DRA events that can give a pod with claims that OMEGangPack parked room it
// lacked (docs/design.md §3.1, "Devices"): a claim deallocated or deleted frees its devices
// (the pod deletion that precedes it is hinted too, but the resourceclaim controller
// deallocates the claim after the pod is gone), a driver publishes or changes devices, a
// device class is created or fixed.
func draEvents() []fwk.ClusterEventWithHint {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: hintClaimFreed},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: hintWithClaims},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: hintWithClaims},
	}
}

// hintWithClaims queues a pod that has claims.
func hintWithClaims(_ klog.Logger, target *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if len(target.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// hintClaimFreed queues a pod with claims when a claim's devices were given back: its
// allocation removed, or the allocated claim deleted.
func hintClaimFreed(_ klog.Logger, target *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if len(target.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	o, n, err := util.As[*resourceapi.ResourceClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if o != nil && o.Status.Allocation != nil && (n == nil || n.Status.Allocation == nil) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
