package gangpack

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// SortName is the gang-aware queue sort plugin, registered next to OMEGangPack. Enabled as a
// profile's queueSort (instead of PrioritySort), it keeps the members of one gang adjacent in
// the active queue: by priority, then by the gang's age (its PodGroup's creation time), then by
// gang key, then by the time the pod entered the queue. A gang's members are then scheduled
// back to back instead of interleaved with other gangs', so a gang forms, reserves and binds
// in one run while later gangs wait their turn. A standalone pod counts as a gang of its own,
// aged by the time it entered the queue, as PrioritySort orders it.
const SortName = "OMEGangSort"

// GangSort is the queue sort plugin.
type GangSort struct {
	factory any // the scheduler's shared informer factory, to find OMEGangPack's PodGroups
}

var _ fwk.QueueSortPlugin = &GangSort{}

// instances maps a scheduler's shared informer factory to its OMEGangPack, for GangSort.
var instances sync.Map

// NewSort builds the queue sort plugin.
func NewSort(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return &GangSort{factory: h.SharedInformerFactory()}, nil
}

// Name returns the plugin name.
func (s *GangSort) Name() string { return SortName }

// Less orders the active queue: higher priority first, then older gangs, then by gang key,
// then by queue time.
func (s *GangSort) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := corev1helpers.PodPriority(a.GetPodInfo().GetPod()), corev1helpers.PodPriority(b.GetPodInfo().GetPod())
	if pa != pb {
		return pa > pb
	}
	ta, ka := s.gangAge(a)
	tb, kb := s.gangAge(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ka != kb {
		return ka < kb
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// gangAge returns the time and key a pod is ordered by: its PodGroup's creation time and gang
// key for a member (the pod's own creation time while the PodGroup is unknown), its queue time
// and no key for a standalone pod.
func (s *GangSort) gangAge(qp fwk.QueuedPodInfo) (time.Time, string) {
	p := qp.GetPodInfo().GetPod()
	key, name, member := gang.Of(p)
	if !member {
		return qp.GetTimestamp(), ""
	}
	if v, ok := instances.Load(s.factory); ok {
		if r := v.(*GangPack).podGroups; r != nil {
			if pg, err := r.Get(p.Namespace, name); err == nil && pg != nil {
				return pg.CreationTimestamp.Time, key
			}
		}
	}
	return p.CreationTimestamp.Time, key
}
