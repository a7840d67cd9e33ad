package reliability

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Hundreds of gangs created member-first, their members in random order, the PodGroups
// afterwards: every gang ends whole in one domain, no node double-booked.
func TestBurstOfHundredsOfGangsMemberFirst(t *testing.T) {
	w := newWorld(t)
	const gangs, size = 200, 2
	w.domains(100, 4)
	w.scheduler("sched", devenv.Profile{})
	type member struct{ gang, pod string }
	var members []member
	for g := 0; g < gangs; g++ {
		for i := 0; i < size; i++ {
			members = append(members, member{fmt.Sprintf("g%03d", g), fmt.Sprintf("g%03d-%d", g, i)})
		}
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	start := time.Now()
	for _, m := range members {
		mustPod(t, w, devenv.PodSpec{Namespace: w.ns, Name: m.pod, Group: m.gang, GPUs: 1, Apart: true})
	}
	order := rng.Perm(gangs)
	for _, g := range order {
		if _, err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).Create(w.ctx, devenv.NewPodGroup(w.ns, fmt.Sprintf("g%03d", g), size, domainKey, 120), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitBound(gangs*size, 180*time.Second, 120*time.Second)
	t.Logf("%d gangs (%d pods) bound %.1fs after the first member was created", gangs, gangs*size, time.Since(start).Seconds())
}
