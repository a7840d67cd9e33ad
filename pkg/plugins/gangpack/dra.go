package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// draDevices is what planning reads of DRA (plan.Devices): the claims of a template pod's
// members, from the ResourceClaimTemplates the scheduler watches and the claims the
// framework's shared DRA manager tracks, and a view of the devices as the DynamicResources
// plugin sees them (slices, classes, allocated devices and allocations in flight).
type draDevices struct {
	manager   fwk.SharedDRAManager
	templates resourcelisters.ResourceClaimTemplateLister
	features  structured.Features
	cel       *cel.Cache
}

// newDRADevices returns the plugin's plan.Devices, nil when the framework has no shared DRA
// manager (the DynamicResourceAllocation feature off): device room is then not counted. It
// registers the ResourceClaimTemplate informer, so it runs before the informers start.
func newDRADevices(h fwk.Handle) plan.Devices {
	m := h.SharedDRAManager()
	if m == nil {
		return nil
	}
	f := devices.DefaultFeatures()
	return &draDevices{manager: m, templates: h.SharedInformerFactory().Resource().V1().ResourceClaimTemplates().Lister(),
		features: f, cel: devices.NewCELCache(f)}
}

func (d *draDevices) Claims(pod *v1.Pod) (member, shared []*resourceapi.ResourceClaim, err error) {
	return devices.MemberClaims(pod, func(ns, name string) (*resourceapi.ResourceClaimTemplate, error) {
		return d.templates.ResourceClaimTemplates(ns).Get(name)
	}, d.manager.ResourceClaims().Get)
}

func (d *draDevices) View(ctx context.Context) (*devices.Inputs, error) {
	return devices.FromManager(ctx, d.manager, d.features, d.cel)
}
