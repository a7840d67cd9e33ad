package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The bind window counts pods only while they wait on the API client (the nomination PATCH
// and the Binding call), not while VolumeBinding's PreBind waits for volumes: 300 pods whose
// claims use a WaitForFirstConsumer class without a provisioner sit in PreBind (for
// bindTimeoutSeconds, 600 s), and a plain pod created after them still binds at once.
func TestBindWindowDoesNotCountVolumeBinding(t *testing.T) {
	const stuck = 300
	e := newEnv(t)
	for i := 0; i < 3; i++ {
		e.node(devenv.NodeSpec{Name: fmt.Sprintf("n-%d", i), Pods: 110})
	}
	class := e.storageClassWithoutProvisioner()
	e.startScheduler(devenv.Profile{})

	for i := 0; i < stuck; i++ {
		e.podWithClaim(fmt.Sprintf("vol-%d", i), class)
	}
	nominated, err := e.countUntil(30*time.Second, stuck, func(p *v1.Pod) bool {
		return p.Spec.NodeName == "" && p.Status.NominatedNodeName != ""
	})
	if err != nil {
		// Not fatal: the plain pod's wait below is the user-visible part.
		t.Errorf("%d of %d pods with unbound claims reached PreBind (nominatedNodeName set) within 30s; "+
			"ome_scheduler_binds_in_flight = %v", nominated, stuck, metric(t, "ome_scheduler_binds_in_flight", nil))
	}

	created := time.Now()
	e.pod(devenv.PodSpec{Name: "plain"})
	if _, err := devenv.WaitForBound(e.ctx, e.cp.Client, e.ns, 2*time.Second, "plain"); err != nil {
		got, _ := devenv.WaitForBound(e.ctx, e.cp.Client, e.ns, 60*time.Second, "plain")
		t.Fatalf("plain pod not bound within 2s of creation with %d pods in PreBind (bound to %q after %v); "+
			"ome_scheduler_binds_in_flight = %v, ome_scheduler_bind_window_wait_seconds_total = %v",
			nominated, got["plain"], time.Since(created).Round(100*time.Millisecond),
			metric(t, "ome_scheduler_binds_in_flight", nil), metric(t, "ome_scheduler_bind_window_wait_seconds_total", nil))
	}
	// Every pod of the test is now in PreBind or bound: none waits on the API, so none counts
	// (the informer may lag the API by a moment).
	var inFlight float64
	err = wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 2*time.Second, true, func(_ context.Context) (bool, error) {
		inFlight = metric(t, "ome_scheduler_binds_in_flight", nil)
		return inFlight == 0, nil
	})
	if err != nil {
		t.Fatalf("ome_scheduler_binds_in_flight = %v with every pod in PreBind or bound, want 0 (none waits on the API)", inFlight)
	}
}

// storageClassWithoutProvisioner creates a WaitForFirstConsumer StorageClass whose
// provisioner does not exist: VolumeBinding's Filter accepts its claims (no CSIDriver
// reports capacity) and its PreBind waits for a binding that never comes.
func (e *env) storageClassWithoutProvisioner() string {
	e.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: e.ns + "-absent"},
		Provisioner:       "example.com/absent",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if _, err := e.cp.Client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create StorageClass: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.cp.Client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	return sc.Name
}

// podWithClaim creates a PVC of the class and a standalone pod that mounts it.
func (e *env) podWithClaim(name, class string) {
	e.t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.cp.Client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, pvc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PVC %s: %v", name, err)
	}
	pod := devenv.NewPod(devenv.PodSpec{Namespace: e.ns, Name: name})
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	if _, err := e.cp.Client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
}

// countUntil polls the namespace's pods until want of them satisfy ok, and returns how many
// did at the end.
func (e *env) countUntil(timeout time.Duration, want int, ok func(*v1.Pod) bool) (int, error) {
	n := 0
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := e.cp.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		n = 0
		for i := range list.Items {
			if ok(&list.Items[i]) {
				n++
			}
		}
		return n >= want, nil
	})
	return n, err
}
