package integration

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Absurd inputs get a clear reason, never a panic and never a lost pod.

func TestTenThousandMemberPodGroup(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("huge", 10000, domainKey, 60)
	pods := e.gang("huge", 2, 1, false)
	e.message(pods[1], "waiting for all PodGroup member templates for "+e.ns+"/huge: 2 of 10000 members exist", 20*time.Second)
	e.staysPending(time.Second, pods...)
	// The scheduler is alive and still schedules others.
	e.podGroup("ok", 2, domainKey, 60)
	ok := e.gang("ok", 2, 1, true)
	e.bound(20*time.Second, ok...)
}

func TestGangPodsWithoutRequests(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 3, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 0, true)
	got := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("request-less gang in %s, want a (room counted in pods: 2 < 3)", d)
	}
}

func TestPodGroupInAnotherNamespaceIsNotUsed(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	other := e.ns + "-other"
	if err := devenv.CreateNamespace(e.ctx, e.cp.Client, other); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(other).Create(e.ctx, devenv.NewPodGroup(other, "g", 2, domainKey, 60), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "PodGroup "+e.ns+"/g not resolvable yet", 20*time.Second)
	e.staysPending(2*time.Second, pods...)
}

func TestNodesWithoutAllocatable(t *testing.T) {
	e := newEnv(t)
	// Nodes created without status: no allocatable, not Ready.
	for _, n := range []string{"bare-0", "bare-1"} {
		name := e.ns + "-" + n
		if _, err := e.cp.Client.CoreV1().Nodes().Create(e.ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{domainKey: "bare"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.nodes = append(e.nodes, name)
	}
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, true)
	e.message(pods[0], "no domain has room for gang "+e.ns+"/g", 20*time.Second)
	e.domain("a", 2, 1)
	got := e.bound(20*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("gang in %s, want a", d)
	}
}

func TestSameNamesInTwoNamespaces(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 2, 1)
	e.domain("b", 2, 1)
	e.startScheduler(devenv.Profile{})
	other := e.ns + "-twin"
	if err := devenv.CreateNamespace(e.ctx, e.cp.Client, other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = e.cp.Client.CoreV1().Pods(other).DeleteCollection(t.Context(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	e.podGroup("g", 2, domainKey, 60)
	if _, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(other).Create(e.ctx, devenv.NewPodGroup(other, "g", 2, domainKey, 60), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.gang("g", 2, 1, true)
	for _, p := range pods {
		if _, err := devenv.CreatePod(e.ctx, e.cp.Client, devenv.PodSpec{Namespace: other, Name: p, Group: "g", GPUs: 1, Apart: true}); err != nil {
			t.Fatal(err)
		}
	}
	mine := e.bound(20*time.Second, pods...)
	theirs, err := devenv.WaitForBound(e.ctx, e.cp.Client, other, 20*time.Second, pods...)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := e.oneDomain(mine, domainKey), e.oneDomain(theirs, domainKey)
	if d1 == d2 {
		t.Fatalf("both gangs g in domain %s", d1)
	}
}
