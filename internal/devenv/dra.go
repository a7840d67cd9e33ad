package devenv

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DRA objects as a node-local DRA driver publishes them (DeviceClass, ResourceSlice) and as a
// workload asks for devices (ResourceClaimTemplate, PodSpec.Claims). kube-scheduler's
// DynamicResources plugin waits for a pod's generated claims, which the resourceclaim
// controller of kube-controller-manager creates (StartClaimController).

// ClaimController is the kube-controller-manager controller that creates a pod's ResourceClaims
// from its ResourceClaimTemplates (names.ResourceClaimController in k8s.io/kubernetes v1.35.4;
// "resource-claim-controller" is its alias).
const ClaimController = "resourceclaim-controller"

// NewDeviceClass returns a DeviceClass selecting every device of driver (CEL
// `device.driver == "<driver>"`), named after the driver.
func NewDeviceClass(driver string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)},
		}}},
	}
}

// NewNodeSlice returns the one ResourceSlice driver publishes for node: pool named after the
// node (generation 1, one slice), spec.nodeName set, devices <prefix>-0 … <prefix>-(n-1). It
// is named <node>-<driver> and carries labels.
func NewNodeSlice(driver, node, prefix string, n int, labels map[string]string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver, Labels: labels},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := 0; i < n; i++ {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("%s-%d", prefix, i)})
	}
	return s
}

// ExactDevices is a device request for count devices of class.
func ExactDevices(request, class string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: request, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
}

// NewClaimTemplate returns a ResourceClaimTemplate whose claims make the requests.
func NewClaimTemplate(ns, name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{
			Devices: resourceapi.DeviceClaim{Requests: requests}}},
	}
}

// PodClaim is one entry of a test pod's spec.resourceClaims, used by its container
// (resources.claims): a claim generated from the ResourceClaimTemplate Template, or the
// ResourceClaim Claim (shared by the pods naming it) when Template is empty.
type PodClaim struct {
	Name     string
	Template string
	Claim    string
}

// StartClaimController runs kube-controller-manager from bin/ with only the resourceclaim
// controller, against the control plane, logging to <cp.Dir>/<logName>.log.
func StartClaimController(cp *ControlPlane, logName string) (*Process, error) {
	return StartProcess(cp.Dir, "kube-controller-manager", logName,
		"--kubeconfig="+cp.KubeConfigPath, "--controllers="+ClaimController,
		"--leader-elect=false", "--secure-port=0", "--v=2")
}

// WaitClaimsCreated waits until the resourceclaim controller has recorded a generated claim
// for every template entry of the pod (status.resourceClaimStatuses) and returns entry name →
// claim name.
func WaitClaimsCreated(ctx context.Context, cp *ControlPlane, ns, pod string, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			out := map[string]string{}
			for _, s := range p.Status.ResourceClaimStatuses {
				if s.ResourceClaimName != nil {
					out[s.Name] = *s.ResourceClaimName
				}
			}
			want := 0
			for _, c := range p.Spec.ResourceClaims {
				if c.ResourceClaimTemplateName != nil {
					want++
				}
			}
			if len(out) == want {
				return out, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod %s/%s: the resourceclaim controller created no claims within %s (err %v)", ns, pod, timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
