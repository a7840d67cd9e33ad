package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// clears reports whether a PostFilter result removes the pod's nomination (what
// kube-scheduler does with ModeOverride and an empty node, schedule_one.go:1150).
func clears(res *fwk.PostFilterResult) bool {
	return res != nil && res.Mode() == fwk.ModeOverride && res.NominatingInfo.NominatedNodeName == ""
}

// Every PostFilter answer that does not nominate clears the pod's nomination: a pinned
// member's unwind, a surplus member, a pod without a pin (preemption off or nothing to evict).
func TestPostFilterClearsNomination(t *testing.T) {
	t.Run("pinned member unwound", func(t *testing.T) {
		nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
		m0, m1 := nominated(gangMember("g-0", "g", 1), "a0"), gangMember("g-1", "g", 1)
		w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
		c := w.mustPin(m0)
		res, st := w.pl.PostFilter(w.ctx, c.cs, m0, filteredOut())
		if st.Message() != msg.ReservationReleased || !clears(res) {
			t.Fatalf("PostFilter = %+v, %v; want %q with a clearing nomination", res, st, msg.ReservationReleased)
		}
	})
	t.Run("no pin, preemption off", func(t *testing.T) {
		nodes := []*v1.Node{testNode("a0", "a", 1)}
		solo := nominated(standalone("solo"), "a0")
		w := newWorld(t, nil, nodes, []*v1.Pod{placedOn(standalone("other"), "a0"), solo})
		res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
		if st.Code() != fwk.Unschedulable || !clears(res) {
			t.Fatalf("PostFilter = %+v, %v; want Unschedulable with a clearing nomination", res, st)
		}
	})
	t.Run("preemption nominates", func(t *testing.T) {
		nodes := []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)}
		solo := nominated(prio(standalone("solo"), 10), "b9")
		w := newPreemptWorld(t, nodes, append(gangOn("low", 1, "a1", "a2"), solo), podGroup("low", 2))
		res, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
		if !st.IsSuccess() || nominatedTo(res) != "a1" {
			t.Fatalf("PostFilter = %+v, %v; want a nomination to a1", res, st)
		}
		// While its victims terminate, the next failure keeps the nomination it was given.
		solo.Status.NominatedNodeName = "a1"
		res, _ = w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
		if nominatedTo(res) != "a1" {
			t.Fatalf("PostFilter while victims terminate = %+v; want the nomination to a1 kept", res)
		}
	})
}

// nominatedTo returns the node a PostFilter result nominates ("" for none or a clear).
func nominatedTo(res *fwk.PostFilterResult) string {
	if res == nil || res.Mode() != fwk.ModeOverride {
		return ""
	}
	return res.NominatingInfo.NominatedNodeName
}

// A member rejected after waiting at Permit gets, in the copy Unreserve is handed (the
// framework's assumed copy), the node kube-scheduler published as its nomination before it
// waited, so the failure handler's clear is not a no-op. A pod that never waited and is not
// nominated in the informer keeps its copy as it is.
func TestUnreserveRestoresPublishedNomination(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1)}
	m0, m1 := gangMember("g-0", "g", 1), gangMember("g-1", "g", 1)
	w := newWorld(t, nil, nodes, []*v1.Pod{m0, m1}, podGroup("g", 2))
	w.pl.nominates = true
	c := w.mustPin(m0)
	copy0 := m0.DeepCopy()
	c.pod = copy0
	if st := c.reserveOn("a0"); st.Code() != fwk.Wait {
		t.Fatalf("Permit(g-0) = %v, want Wait", st)
	}
	w.pl.Unreserve(w.ctx, c.cs, copy0, "a0")
	if copy0.Status.NominatedNodeName != "a0" {
		t.Fatalf("assumed copy's nominatedNodeName = %q after Unreserve, want a0", copy0.Status.NominatedNodeName)
	}

	// Off the NominatedNodeNameForExpectation gate kube-scheduler publishes nothing.
	w.pl.nominates = false
	copy1 := m1.DeepCopy()
	w.pl.Unreserve(w.ctx, framework.NewCycleState(), copy1, "a1")
	if copy1.Status.NominatedNodeName != "" {
		t.Fatalf("copy of a pod that was never nominated = %q, want empty", copy1.Status.NominatedNodeName)
	}

	// A pod that did not wait at Permit (its PreBind had work) but that the informer shows
	// nominated to the node.
	w.pl.nominates = true
	w.updatePod(nominated(m1.DeepCopy(), "a1"))
	copy2 := m1.DeepCopy()
	w.pl.Unreserve(w.ctx, framework.NewCycleState(), copy2, "a1")
	if copy2.Status.NominatedNodeName != "a1" {
		t.Fatalf("copy of a pod nominated in the informer = %q, want a1", copy2.Status.NominatedNodeName)
	}
}

// Filter's first pass (kube-scheduler adds pods nominated to the node) must not count a
// member of a reserving gang twice: once as a nominated pod and once in its reservation.
func TestFilterCountsNominatedReservedMemberOnce(t *testing.T) {
	// Two GPUs a member, three a node: the gang reserves one member on each node.
	nodes := []*v1.Node{testNode("a0", "a", 3), testNode("a1", "a", 3)}
	g0, g1 := gangMember("g-0", "g", 2), gangMember("g-1", "g", 2)
	g0.Spec.Priority, g1.Spec.Priority = new(int32), new(int32)
	g1.Status.NominatedNodeName = "a1"
	solo := standalone("solo")
	w := newWorld(t, nil, nodes, []*v1.Pod{g0, g1, solo}, podGroup("g", 2))
	w.mustPin(g0)
	if r := w.pl.ledger.ReservedOn("a1", ""); r.Pods != 1 {
		t.Fatalf("g reserves %+v on a1, want one member", r)
	}
	ni, err := w.h.snapshot.NodeInfos().Get("a1")
	if err != nil {
		t.Fatal(err)
	}
	c, st := w.preFilter(solo)
	if !st.IsSuccess() && st.Code() != fwk.Skip {
		t.Fatalf("PreFilter(solo) = %v", st)
	}
	if st := w.pl.Filter(w.ctx, c.cs, solo, ni); !st.IsSuccess() {
		t.Fatalf("Filter(solo on a1) without nominated pods = %v, want success", st)
	}
	// Pass 1: g-1, nominated to a1, added to the node as kube-scheduler does.
	withNominated := ni.Snapshot()
	withNominated.AddPodInfo(mustPodInfo(t, g1))
	if st := w.pl.Filter(w.ctx, c.cs, solo, withNominated); !st.IsSuccess() {
		t.Fatalf("Filter(solo on a1) with g-1 nominated there = %v, want success (g-1's GPU is its reservation)", st)
	}
	// A second nominated pod that no reservation covers does count.
	other := nominated(standalone("other"), "a1")
	withNominated.AddPodInfo(mustPodInfo(t, other))
	if st := w.pl.Filter(w.ctx, c.cs, solo, withNominated); st.IsSuccess() {
		t.Fatalf("Filter(solo on a1) with g-1 and another pod nominated = success, want the reservation to refuse it")
	}
}

func mustPodInfo(t *testing.T, p *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}
