package integration

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// A member that waited at Permit has its node published as status.nominatedNodeName
// (kube-scheduler's NominatedNodeNameForExpectation, on by default in 1.35). When its attempt
// ends without binding, the nomination must go too: kube-scheduler's Filter counts a
// nominated pod of equal or higher priority on its node, so a leftover nomination makes an
// empty node refuse pods for as long as the member stays pending. One test per way an
// attempt ends: the hold expires, PostFilter unwinds it, the leader goes away.

// nominatedNode waits until the pod carries a nomination and returns it.
func (e *env) nominatedNode(pod string, timeout time.Duration) string {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod, metav1.GetOptions{})
		if err == nil && p.Status.NominatedNodeName != "" {
			return p.Status.NominatedNodeName
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("%s has no nominatedNodeName after %v", pod, timeout)
	return ""
}

// notNominated waits until the pending pod carries no nomination.
func (e *env) notNominated(pod string, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	for time.Now().Before(deadline) {
		p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod, metav1.GetOptions{})
		if err == nil {
			last = p
			if p.Spec.NodeName != "" {
				e.t.Fatalf("%s was bound to %s, want it pending", pod, p.Spec.NodeName)
			}
			if p.Status.NominatedNodeName == "" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("%s still nominated to %s %v after its attempt ended", pod, last.Status.NominatedNodeName, timeout)
}

// memberWaiting starts the scheduler on a domain a of two 1-GPU nodes with a gang g of two
// (timeout seconds) whose g-1 is gated, and returns the node g-0 waits on at Permit, as its
// nomination shows.
func (e *env) memberWaiting(timeout int32) string {
	e.t.Helper()
	e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, timeout)
	e.waitWithGatedSibling("g", "g-0", "g-1", false)
	return e.nominatedNode("g-0", 10*time.Second)
}

// plainOn creates an equal-priority pod that needs one GPU of node and waits until it is
// bound there.
func (e *env) plainOn(name, node string, timeout time.Duration) {
	e.t.Helper()
	e.pod(devenv.PodSpec{Name: name, GPUs: 1, NodeSelector: map[string]string{v1.LabelHostname: node}})
	if got := e.bound(timeout, name)[name]; got != node {
		e.t.Fatalf("%s bound to %s, want %s", name, got, node)
	}
}

// The hold expires: the waiting member is rejected (its domain rests for another timeout),
// its nomination is cleared, and a plain pod binds on the node it had.
func TestNominationClearedAfterHoldExpiry(t *testing.T) {
	e := newEnv(t)
	node := e.memberWaiting(6)
	e.message("g-0", "domain a rests after the gang's reservation there expired", 20*time.Second)
	e.notNominated("g-0", 5*time.Second)
	// The domain rests for 6 s after the expiry: the node is free of any reservation.
	e.plainOn("plain", node, 5*time.Second)
}

// hostPortPod is a member (group non-empty) or plain pod with one GPU and host port 9000,
// which OMEGangPack's planning does not model and kube-scheduler's NodePorts filter does.
func (e *env) hostPortPod(name, group string, gates ...string) {
	e.t.Helper()
	p := devenv.NewPod(devenv.PodSpec{Namespace: e.ns, Name: name, Group: group, GPUs: 1, Gates: gates})
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 9000, HostPort: 9000, Protocol: v1.ProtocolTCP}}
	if _, err := e.cp.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
}

// Filter refuses the last member every node of the pinned domain (the host port is taken on
// the free node, the other holds its sibling): PostFilter unwinds the attempt and rejects
// the waiting sibling. Its nomination is cleared, and once the gang can no longer form (a-1
// cordoned) a plain pod binds on the node it had.
func TestNominationClearedAfterPostFilterUnwind(t *testing.T) {
	e := newEnv(t)
	a := e.domain("a", 2, 1)
	e.startScheduler(devenv.Profile{})
	// Another scheduler's pod holds host port 9000 on a-1.
	blocker := devenv.NewPod(devenv.PodSpec{Namespace: e.ns, Name: "blocker", SchedulerName: "other-scheduler"})
	blocker.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 9000, HostPort: 9000, Protocol: v1.ProtocolTCP}}
	if _, err := e.cp.Client.CoreV1().Pods(e.ns).Create(e.ctx, blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := devenv.BindPod(e.ctx, e.cp.Client, e.ns, "blocker", a[1]); err != nil {
		t.Fatal(err)
	}
	e.podGroup("g", 2, domainKey, 60)
	gw := newGateWatch(t)
	e.hostPortPod("g-1", "g", "example.com/later")
	e.hostPortPod("g-0", "g")
	gw.wait()
	if node := e.nominatedNode("g-0", 10*time.Second); node != a[0] {
		t.Fatalf("g-0 nominated to %s, want %s (the host port is taken on %s)", node, a[0], a[1])
	}
	e.ungate("g-1")
	e.message("g-1", "gang reservation released after all candidate nodes were filtered", 20*time.Second)
	// The gang may have pinned a again (every fitting domain failed, the lap wraps) and g-0 may
	// wait there in a live attempt: a cordoned a-1 makes the domain unfit for the gang, so
	// that attempt unwinds the same way and the gang stops forming.
	e.updateNode(a[1], func(n *v1.Node) { n.Spec.Unschedulable = true })
	e.notNominated("g-0", 15*time.Second)
	e.plainOn("plain", a[0], 15*time.Second)
}

// The leader stops while a member waits at Permit (its nomination stays in the API), the
// gated sibling is deleted in the gap, and a new scheduler starts: the member's nomination
// is of a dead attempt. The new scheduler clears it at the member's first failed cycle, and a
// plain pod binds on the node.
func TestNominationClearedAfterFailover(t *testing.T) {
	e := newEnv(t)
	node := e.memberWaiting(60)
	e.stopScheduler()
	e.deletePodNow("g-1")
	e.startScheduler(devenv.Profile{})
	e.notNominated("g-0", 15*time.Second)
	e.plainOn("plain", node, 15*time.Second)
}
