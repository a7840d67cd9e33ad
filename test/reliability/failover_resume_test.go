package reliability

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// A gang forming when the leader dies keeps its nodes (docs/design.md §12): gang first (4
// members, one gated) has three members waiting at Permit, nominated to three nodes of
// domain a (7 nodes: best fit against b's 8); the leader is killed; gang second (4 members,
// equal priority, its PodGroup older, so it sorts first) arrives in the gap and would fit a
// best, on the four nodes nobody is nominated to. The new leader pins first's nominated
// domain before anything plans: second goes to b, first's members wait on the nodes they
// were nominated to, and once the gated member is released first binds whole on exactly
// those nodes. (Without the resumed pin, second binds on a's free nodes and first, short of
// one node there, moves to b.)
func TestFailoverResumesNominatedGang(t *testing.T) {
	w := newWorld(t)
	for i := 0; i < 7; i++ {
		w.node(fmt.Sprintf("a-%d", i), "a")
	}
	for i := 0; i < 8; i++ {
		w.node(fmt.Sprintf("b-%d", i), "b")
	}
	p := devenv.Profile{LeaderElect: true, LeaseNamespace: "ome", LeaseDuration: 6 * time.Second}
	r1 := w.scheduler("replica-1", p)
	r2 := w.scheduler("replica-2", p)
	var old *devenv.Process
	if err := wait.PollUntilContextTimeout(w.ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		old = leader(r1, r2)
		return old != nil, nil
	}); err != nil {
		t.Fatal("no replica acquired the Lease")
	}
	w.podGroup("second", 4)
	time.Sleep(1100 * time.Millisecond) // creation times have one-second resolution
	w.podGroup("first", 4)
	for i := 0; i < 4; i++ {
		s := devenv.PodSpec{Namespace: w.ns, Name: fmt.Sprintf("first-%d", i), Group: "first", GPUs: 1, Apart: true}
		if i == 3 {
			s.Gates = []string{"example.com/later"}
		}
		mustPod(t, w, s)
	}
	nominated := w.waitNominated([]string{"first-0", "first-1", "first-2"}, 60*time.Second)
	for pod, node := range nominated {
		if !strings.HasPrefix(node, "a-") {
			t.Fatalf("the old leader nominated %s to %s, want a node of domain a", pod, node)
		}
	}
	old.Kill()
	for i := 0; i < 4; i++ {
		mustPod(t, w, devenv.PodSpec{Namespace: w.ns, Name: fmt.Sprintf("second-%d", i), Group: "second", GPUs: 1, Apart: true})
	}
	var cur *devenv.Process
	if err := wait.PollUntilContextTimeout(w.ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		cur = leader(r1, r2)
		return cur != nil && cur != old, nil
	}); err != nil {
		t.Fatal("the standby never took over")
	}
	waitLog(t, cur, `source="nominated"`)
	if lines, _ := devenv.GrepFile(cur.LogPath, `source="nominated"`); len(lines) != 1 ||
		!strings.Contains(lines[0], `gang="rel/first"`) || !strings.Contains(lines[0], `domain="a"`) {
		t.Fatalf("the new leader's pins with source nominated: %q, want first's on a", lines)
	}
	// second binds in b; first's members wait again on their nominated nodes.
	w.waitBound(4, 90*time.Second, 90*time.Second)
	for i := 0; i < 4; i++ {
		if node := w.podNode(fmt.Sprintf("second-%d", i)); !strings.HasPrefix(node, "b-") {
			t.Fatalf("second-%d bound to %q, want domain b (a is first's)", i, node)
		}
	}
	if again := w.waitNominated([]string{"first-0", "first-1", "first-2"}, 60*time.Second); !maps.Equal(again, nominated) {
		t.Fatalf("first's members wait on %v after the failover, want their nominations %v", again, nominated)
	}
	w.ungate("first-3")
	w.waitBound(8, 90*time.Second, 90*time.Second)
	for pod, node := range nominated {
		if got := w.podNode(pod); got != node {
			t.Fatalf("%s bound to %s, want its nominated node %s", pod, got, node)
		}
	}
	if node := w.podNode("first-3"); !strings.HasPrefix(node, "a-") {
		t.Fatalf("first-3 bound to %q, want domain a", node)
	}
}

// node creates a one-GPU node in the domain.
func (w *world) node(name, domain string) {
	w.t.Helper()
	if _, err := devenv.CreateNode(w.ctx, w.cp.Client, devenv.NodeSpec{Name: name, GPUs: 1, Labels: map[string]string{domainKey: domain}}); err != nil {
		w.t.Fatal(err)
	}
}

// podGroup creates a PodGroup of minMember with a 300 s timeout under the domain key.
func (w *world) podGroup(name string, minMember int32) {
	w.t.Helper()
	if _, err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).Create(w.ctx, devenv.NewPodGroup(w.ns, name, minMember, domainKey, 300), metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// waitNominated waits until every named pod is unbound with a nomination and returns them.
func (w *world) waitNominated(pods []string, timeout time.Duration) map[string]string {
	w.t.Helper()
	out := map[string]string{}
	err := wait.PollUntilContextTimeout(w.ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range pods {
			p, err := w.cp.Client.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName != "" || p.Status.NominatedNodeName == "" {
				return false, nil
			}
			out[name] = p.Status.NominatedNodeName
		}
		return true, nil
	})
	if err != nil {
		w.t.Fatalf("%v not all waiting with a nomination within %s (so far %v)", pods, timeout, out)
	}
	return out
}

// podNode returns the node the pod is bound to ("" when unbound or unreadable).
func (w *world) podNode(name string) string {
	p, err := w.cp.Client.CoreV1().Pods(w.ns).Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

// ungate removes the pod's scheduling gates.
func (w *world) ungate(name string) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := w.cp.Client.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{}
		_, err = w.cp.Client.CoreV1().Pods(w.ns).Update(ctx, p, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		w.t.Fatalf("ungate %s: %v", name, err)
	}
}
