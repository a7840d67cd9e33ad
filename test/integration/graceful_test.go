package integration

import (
	"testing"
	"time"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Real-cluster conditions on a real API server: members deleted gracefully stay Terminating
// (on their node, holding its GPUs) until the fake kubelet finishes the deletion.

// A whole-gang restart: every member is deleted gracefully and replacements arrive while the
// old members are still Terminating. No replacement may bind before the whole new gang exists.
func TestWholeGangRestartWithGracefulDeletion(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 6, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 3, domainKey, 120)
	old := e.gang("g", 3, 1, true)
	e.bound(20*time.Second, old...)
	for _, p := range old {
		e.deletePod(p)
	}
	e.pod(devenv.PodSpec{Name: "g-r0", Group: "g", GPUs: 1, Apart: true})
	e.message("g-r0", "waiting for all PodGroup member templates for "+e.ns+"/g: 1 of 3 members exist", 20*time.Second)
	e.staysPending(2*time.Second, "g-r0")
	e.pod(devenv.PodSpec{Name: "g-r1", Group: "g", GPUs: 1, Apart: true})
	e.pod(devenv.PodSpec{Name: "g-r2", Group: "g", GPUs: 1, Apart: true})
	got := e.bound(30*time.Second, "g-r0", "g-r1", "g-r2")
	e.oneDomain(got, domainKey)
	e.distinctNodes(got)
}

// A committed gang loses two of its three members gracefully: its first replacement waits
// for the second instead of binding alone next to the one survivor.
func TestGangLosingTwoMembersGracefullyFormsAgain(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 5, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 3, domainKey, 120)
	pods := e.gang("g", 3, 1, true)
	e.bound(20*time.Second, pods...)
	e.deletePod(pods[1])
	e.deletePod(pods[2])
	e.pod(devenv.PodSpec{Name: "g-r1", Group: "g", GPUs: 1, Apart: true})
	e.message("g-r1", "waiting for all PodGroup member templates for "+e.ns+"/g: 1 of 2 members exist", 20*time.Second)
	e.staysPending(2*time.Second, "g-r1")
	e.pod(devenv.PodSpec{Name: "g-r2", Group: "g", GPUs: 1, Apart: true})
	got := e.bound(30*time.Second, pods[0], "g-r1", "g-r2")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacements in %s, want a", d)
	}
}

// Grace-0 deletion stays a supported variant: replacements of instantly deleted members
// rejoin the gang's domain.
func TestReplacementsAfterInstantDeletion(t *testing.T) {
	e := newEnv(t)
	e.domain("a", 3, 1)
	e.domain("b", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 3, domainKey, 120)
	pods := e.gang("g", 3, 1, true)
	e.bound(20*time.Second, pods...)
	e.deletePodNow(pods[1])
	e.deletePodNow(pods[2])
	e.pod(devenv.PodSpec{Name: "g-r1", Group: "g", GPUs: 1, Apart: true})
	e.pod(devenv.PodSpec{Name: "g-r2", Group: "g", GPUs: 1, Apart: true})
	got := e.bound(30*time.Second, pods[0], "g-r1", "g-r2")
	if d := e.oneDomain(got, domainKey); d != "a" {
		t.Fatalf("replacements in %s, want a", d)
	}
}

// The node of a member waiting at Permit moves to another domain: the next member must not
// complete the gang in the old domain.
func TestNodeOfWaitingMemberRelabelled(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 3, 1)
	e.domain("b", 4, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 120)
	gw := newGateWatch(t)
	e.pod(devenv.PodSpec{Name: "g-1", Group: "g", GPUs: 1, Apart: true, Gates: []string{"example.com/later"}})
	// g-0 can only run on a[0], so the test knows the node it waits on.
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1, Apart: true, NodeSelector: map[string]string{"kubernetes.io/hostname": a[0]}})
	gw.wait()
	e.updateNodeLabel(a[0], domainKey, "b")
	time.Sleep(500 * time.Millisecond)
	e.ungate("g-1")
	got := e.bound(30*time.Second, "g-0", "g-1")
	if d := e.oneDomain(got, domainKey); d != "b" {
		t.Fatalf("gang in %s, want b (where g-0's only node went)", d)
	}
	e.distinctNodes(got)
}

// A gang with one member placed by another scheduler and one member that never fits holds the
// adopted domain at most its timeout: a standalone pod then gets the free node.
func TestAdoptedHoldEndsAtTimeout(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 3)
	e.bindMember("g-0", "g", a[0], 1)
	e.pod(devenv.PodSpec{Name: "g-1", Group: "g", GPUs: 2}) // no node has two GPUs
	e.message("g-1", "adopted domain a cannot fit remaining gang members "+e.ns+"/g", 20*time.Second)
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(20*time.Second, "solo")
	if got["solo"] != a[1] {
		t.Fatalf("solo on %s, want %s", got["solo"], a[1])
	}
}

// A forming gang whose PodGroup turns invalid (minMember 0) stops planning, but the hold it
// already had ends at its timeout: a standalone pod then gets the domain.
func TestHoldOfInvalidatedPodGroupEndsAtTimeout(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 4)
	e.waitWithGatedSibling("g", "g-0", "g-1", true)
	e.updatePodGroup("g", func(pg *schedv1alpha1.PodGroup) { pg.Spec.MinMember = 0 })
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(30*time.Second, "solo")
	if got["solo"] != a[0] && got["solo"] != a[1] {
		t.Fatalf("solo on %s, want a node of domain a", got["solo"])
	}
	e.staysPending(time.Second, "g-0")
}

// A pinned gang that lost its room ("pinned domain ... cannot fit all remaining gang members")
// holds its domain at most its timeout: a standalone pod then gets the room left.
func TestPinnedShortHoldEndsAtTimeout(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 3, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 3, domainKey, 4)
	gw := newGateWatch(t)
	e.pod(devenv.PodSpec{Name: "g-2", Group: "g", GPUs: 1, Apart: true, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: "g-1", Group: "g", GPUs: 1, Apart: true, Gates: []string{"example.com/later"}})
	e.pod(devenv.PodSpec{Name: "g-0", Group: "g", GPUs: 1, Apart: true, NodeSelector: map[string]string{"kubernetes.io/hostname": a[0]}})
	gw.wait()
	// Another scheduler takes one of the two nodes the gang still needs.
	e.occupy("other", a[2], 1)
	e.ungate("g-1")
	e.message("g-1", "cannot fit all remaining gang members", 20*time.Second)
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	e.bound(30*time.Second, "solo")
}
