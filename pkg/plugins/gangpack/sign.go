package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// standaloneSignKey is OMEGangPack's signature fragment for standalone pods.
const standaloneSignKey = "OMEGangPack.Standalone()"

var _ fwk.SignPlugin = &GangPack{}

// SignPod lets kube-scheduler 1.35 batch standalone pods (opportunistic batching): for them
// OMEGangPack's Filter depends only on the node (the hold barrier) and its Score on the
// pod's requests and node constraints, which the in-tree plugins already sign. A hinted node
// still runs every Filter, so a node held since the batch was recorded is refused as usual.
// Gang members are not batched: their nodes depend on the gang's pin and members.
func (pl *GangPack) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if _, _, member := gang.Of(pod); member {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gang members are not batched")
	}
	return []fwk.SignFragment{{Key: standaloneSignKey, Value: true}}, nil
}
