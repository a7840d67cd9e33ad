package gangpack

import (
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
)

// OMEGangSort keeps each gang's members adjacent: priority first, then the older PodGroup,
// then gang key; a standalone pod is ordered by its queue time among them.
func TestGangSortKeepsGangsAdjacent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, newer := podGroup("old", 2), podGroup("new", 2)
	older.CreationTimestamp = metav1.NewTime(t0)
	newer.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
	w := newWorld(t, nil, nil, nil, older, newer)
	instances.Store(w.h.factory, w.pl)
	defer instances.Delete(w.h.factory)
	s := &GangSort{factory: w.h.factory}

	queued := func(p *v1.Pod, at time.Duration) *framework.QueuedPodInfo {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi, Timestamp: t0.Add(at)}
	}
	urgent := standalone("urgent")
	urgent.Spec.Priority = ptr.To[int32](100)
	// Queue arrival interleaves the two gangs; the standalone pod entered the queue after the
	// old PodGroup was created and before the new one.
	list := []*framework.QueuedPodInfo{
		queued(gangMember("new-0", "new", 1), 10*time.Minute),
		queued(gangMember("old-0", "old", 1), 11*time.Minute),
		queued(standalone("solo"), 30*time.Second),
		queued(gangMember("new-1", "new", 1), 12*time.Minute),
		queued(gangMember("old-1", "old", 1), 13*time.Minute),
		queued(urgent, 20*time.Minute),
	}
	sort.SliceStable(list, func(i, j int) bool { return s.Less(list[i], list[j]) })
	var got []string
	for _, q := range list {
		got = append(got, q.Pod.Name)
	}
	want := []string{"urgent", "old-0", "old-1", "solo", "new-0", "new-1"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("queue order %v, want %v", got, want)
		}
	}
}
