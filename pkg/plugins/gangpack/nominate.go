package gangpack

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Nominations an unwound attempt leaves behind (docs/design.md §12, "Nominations").
//
// kube-scheduler v1.35.4 publishes the node of a pod that waits at Permit (or whose PreBind
// has work) as its status.nominatedNodeName: the binding goroutine PATCHes it before
// WaitOnPermit (schedule_one.go:281-300) and does not write it into its own assumed copy of
// the pod. When the attempt then fails, the failure handler means to clear the nomination
// (clearNominatedNode, schedule_one.go:387) but compares the clear with that assumed copy
// (schedule_one.go:1057, 1110, 1150; on the async API path PodStatusPatchCall does the same
// with the copy it was given), finds nothing to change and leaves the nomination in the API.
// The queue then re-adds the pod to its nominator on the old node from the informer's update
// (scheduling_queue.go:1063-1065, nominator.go:112-136), and Filter counts it there against
// every pod of equal or lower priority (framework.go:1195-1217): an empty node refuses pods.
//
// Unreserve runs on that path, in the binding goroutine, just before the failure handler, on
// the same assumed copy (schedule_one.go:366-387). It writes back into the copy the node the
// binding goroutine published, so the failure handler's own status PATCH (the one that marks
// the pod unschedulable) also clears the nomination: no extra API call, on either API path.

// waitedStateKey marks, in CycleState, a pod that Permit told to wait: kube-scheduler
// PATCHed its nominatedNodeName to the node before waiting.
const waitedStateKey fwk.StateKey = "gangpack.waited"

type waitedState struct{ node string }

func (s *waitedState) Clone() fwk.StateData { return s }

// markWaited is Permit's step for a pod it tells to wait on nodeName.
func markWaited(cs fwk.CycleState, nodeName string) {
	if cs != nil {
		cs.Write(waitedStateKey, &waitedState{node: nodeName})
	}
}

// publishedNomination returns the node kube-scheduler published as the pod's nomination in
// this attempt, as far as the plugin knows: the node Permit told it to wait on, else the
// node when the pod informer shows the pod nominated there (a PreBind with work, such as
// volume binding, PATCHes it too); "" when none.
func (pl *GangPack) publishedNomination(cs fwk.CycleState, pod *v1.Pod, nodeName string) string {
	if !pl.nominates {
		return ""
	}
	if w, ok := gang.ReadState[*waitedState](cs, waitedStateKey); ok && w.node == nodeName {
		return nodeName
	}
	if pl.members == nil {
		return ""
	}
	cur, err := pl.members.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID || cur.Status.NominatedNodeName != nodeName {
		return ""
	}
	return nodeName
}

// restoreNomination is Unreserve's step: it writes the nomination kube-scheduler published
// in this attempt into the pod copy Unreserve was given, the copy the failure handler
// compares its clear with, so that clear reaches the API.
func (pl *GangPack) restoreNomination(cs fwk.CycleState, pod *v1.Pod, nodeName string) bool {
	node := pl.publishedNomination(cs, pod, nodeName)
	if node == "" || pod.Status.NominatedNodeName == node {
		return false
	}
	pod.Status.NominatedNodeName = node
	return true
}
