package bench

import (
	"slices"
	_ "unsafe" // go:linkname

	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	_ "k8s.io/kubernetes/pkg/controlplane" // the variables linked below
)

// Profile C (the in-tree GangScheduling plugin) needs the alpha Workload API
// (scheduling.k8s.io/v1alpha1). scheduler_perf's in-process kube-apiserver only adds
// --runtime-config entries for DRA, and alpha group versions are disabled by default, so
// without help the scheduler's Workload informer never syncs and the harness hangs in
// WaitForCacheSync. These two links move the group version from the API server's "alpha,
// disabled by default" list to its "enabled by default" list before any server starts: the
// same effect as --runtime-config=scheduling.k8s.io/v1alpha1=true. The Workload storage
// itself is still gated by GenericWorkload, which only profile C enables, so A and B run
// against the same API server as before.

//go:linkname alphaAPIGroupVersionsDisabledByDefault k8s.io/kubernetes/pkg/controlplane.alphaAPIGroupVersionsDisabledByDefault
var alphaAPIGroupVersionsDisabledByDefault []schema.GroupVersion

//go:linkname stableAPIGroupVersionsEnabledByDefault k8s.io/kubernetes/pkg/controlplane.stableAPIGroupVersionsEnabledByDefault
var stableAPIGroupVersionsEnabledByDefault []schema.GroupVersion

// enableWorkloadAPI serves scheduling.k8s.io/v1alpha1 from every API server the harness
// starts in this process. It is idempotent.
func enableWorkloadAPI() {
	gv := schedulingv1alpha1.SchemeGroupVersion
	alphaAPIGroupVersionsDisabledByDefault = slices.DeleteFunc(alphaAPIGroupVersionsDisabledByDefault,
		func(x schema.GroupVersion) bool { return x == gv })
	if !slices.Contains(stableAPIGroupVersionsEnabledByDefault, gv) {
		stableAPIGroupVersionsEnabledByDefault = append(stableAPIGroupVersionsEnabledByDefault, gv)
	}
}
