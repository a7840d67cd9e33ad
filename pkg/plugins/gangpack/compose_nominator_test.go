package gangpack

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// The composition test's model of kube-scheduler v1.35.4's nominations: who writes a pod's
// status.nominatedNodeName, when the failure handler's clear reaches the API, the nominator
// the queue keeps from the informer, and Filter's pass with the nominated pods. File:line
// references are to k8s.io/kubernetes@v1.35.4/pkg/scheduler.

// inNominator reports whether the queue's nominator holds the pod on its nominatedNodeName
// (as the API view shows it). A pod enters it when it moves to the active queue ungated
// (backend/queue/scheduling_queue.go:675) and on every informer update of a queued pod
// (scheduling_queue.go:1045, 1052, 1065 → backend/queue/nominator.go:112-136, which
// re-adds it on the new version's nominatedNodeName); assume removes it (schedule_one.go:
// 967-969) and updates of an assumed pod are ignored (eventhandlers.go:319-330), so the
// PATCH before WaitOnPermit never puts a waiting pod there. Gated pods are left out: the
// queue adds them when they move to the active queue.
func inNominator(sp *simPod) bool {
	return (sp.state == stActive || sp.state == stParked) && sp.pod.Status.NominatedNodeName != ""
}

// nominatedByNode is the nominator's content: pods by nominated node.
func (s *sim) nominatedByNode() map[string][]*simPod {
	var out map[string][]*simPod
	for _, sp := range s.pods {
		if inNominator(sp) {
			if out == nil {
				out = map[string][]*simPod{}
			}
			n := sp.pod.Status.NominatedNodeName
			out[n] = append(out[n], sp)
		}
	}
	return out
}

// filterNode is RunFilterPluginsWithNominatedPods (framework/runtime/framework.go:1145-1188):
// a first pass with the pods nominated to the node of equal or higher priority, other than
// the pod itself, added to a copy of the NodeInfo and of the cycle state (addGENominatedPods,
// framework.go:1195-1217: nodeInfo.Snapshot(), AddPodInfo; the plugin has no PreFilter
// extensions), then, only when pods were added and the first pass succeeded, a second pass
// without them. fit reports that the default filters, not the plugin, rejected the pod.
func (s *sim) filterNode(cs fwk.CycleState, sp *simPod, ni fwk.NodeInfo, nominated []*simPod) (st *fwk.Status, fit bool) {
	var withNominated fwk.NodeInfo
	prio := corev1helpers.PodPriority(sp.pod)
	for _, q := range nominated {
		if corev1helpers.PodPriority(q.pod) < prio || q.pod.UID == sp.pod.UID {
			continue
		}
		if withNominated == nil {
			withNominated = ni.Snapshot()
		}
		pi, err := framework.NewPodInfo(q.pod)
		if err != nil {
			s.t.Fatal(err)
		}
		withNominated.AddPodInfo(pi)
	}
	if withNominated == nil {
		return s.runFilters(cs, sp, ni)
	}
	if st, fit := s.runFilters(cs.Clone(), sp, withNominated); !st.IsSuccess() {
		return st, fit
	}
	return s.runFilters(cs, sp, ni)
}

// runFilters is RunFilterPlugins: the default filters' model, then the plugin's Filter.
func (s *sim) runFilters(cs fwk.CycleState, sp *simPod, ni fwk.NodeInfo) (*fwk.Status, bool) {
	if st := s.defaultFilters(sp, ni); st != nil {
		return st, true
	}
	return s.pl.Filter(s.ctx, cs, sp.pod, ni), false
}

// failureHandler is the status PATCH of kube-scheduler's failure handler after an assumed
// attempt failed (a Reserve or Permit rejection in the scheduling cycle, or any binding-cycle
// failure): handleSchedulingFailure takes the pod it was handed (schedule_one.go:1057), the
// assumed copy made at assume time (schedule_one.go:197-200) with the nominatedNodeName the
// pod was popped with, which the PATCH before WaitOnPermit (schedule_one.go:281-300) did not
// change; Unreserve ran on that copy just before (schedule_one.go:213, 237, 368). It
// PATCHes clearNominatedNode (schedule_one.go:118 with 228/252, 387) and the PodScheduled condition
// (schedule_one.go:1110-1116), and updatePod clears the nomination only when the copy has
// one (nnnNeedsUpdate, schedule_one.go:1150): with the copy's stale "" the API keeps the node.
// The condition's update reaches the informer, and the nominator re-adds the pod on whatever
// nomination the API kept (inNominator).
func (s *sim) failureHandler(sp *simPod, assumedCopy *v1.Pod) {
	q := sp.pod.DeepCopy()
	if assumedCopy.Status.NominatedNodeName != "" {
		q.Status.NominatedNodeName = ""
	}
	s.statusUpdate(sp, q)
}

// statusUpdate writes a status update of the pod: an informer update, and when the pod is not
// assumed and had a nomination that changed, kube-scheduler's event for the room it no
// longer counts (nominationGone, eventhandlers.go:334-338).
func (s *sim) statusUpdate(sp *simPod, q *v1.Pod) {
	old := sp.pod
	s.updatePod(sp, q)
	if n := q.Status.NominatedNodeName; n != old.Status.NominatedNodeName {
		s.tracef("%s nominated to %q", q.Name, n)
	}
	if !sp.assumed() && old.Status.NominatedNodeName != "" && old.Status.NominatedNodeName != q.Status.NominatedNodeName {
		s.nominationGone(old)
	}
}

// nominationGone is the event kube-scheduler sends when an unassumed pod's nomination changes
// or the pod is deleted (eventhandlers.go:334-338, 369-375): an AssignedPodDelete of the old
// pod, moving the parked pods of lower or equal priority (getLEPriorityPreCheck,
// eventhandlers.go:379-383), which counted it on its node; a pod in flight records it
// (scheduling_queue.go's in-flight events, whatever its priority). NodeResourcesFit queues on
// the deletion of a nominated pod (noderesources/fit.go:379-387), as podMoves does for byFit.
func (s *sim) nominationGone(old *v1.Pod) {
	prio, moves := corev1helpers.PodPriority(old), s.podMoves(old, nil, true)
	s.deliver(func(sp *simPod) bool {
		return (sp == s.cycle || corev1helpers.PodPriority(sp.pod) <= prio) && moves(sp)
	})
}

// assume is the scheduler cache's AssumePod on the copy the scheduling cycle made of the
// popped pod (schedule_one.go:197-200): the copy Reserve, Permit and Unreserve are handed.
func (sp *simPod) assume(node string) *v1.Pod {
	sp.copy = assumed(sp.pod, node)
	return sp.copy
}

// nominate sets the pod's status.nominatedNodeName ("" clears it), as kube-scheduler's status
// patches do: before a Permit wait, with PostFilter's nomination, and the clear of a scheduling
// error. No write when it is already so (updatePod's nnnNeedsUpdate, schedule_one.go:1150).
func (s *sim) nominate(sp *simPod, node string) {
	if sp.pod.Status.NominatedNodeName == node {
		return
	}
	q := sp.pod.DeepCopy()
	q.Status.NominatedNodeName = node
	s.statusUpdate(sp, q)
}

// nominated applies a PostFilter result's nomination to the pod, as the failure handler does:
// a nil result or NominatingInfo is ModeNoop and keeps the pod's (schedule_one.go:185-191),
// ModeOverride sets or clears it (updatePod, schedule_one.go:1110-1116, 1150: only when it
// differs from the popped pod's), and the nominator follows (AddNominatedPod,
// schedule_one.go:1100, then the informer's update, inNominator).
func (s *sim) nominated(sp *simPod, res *fwk.PostFilterResult) {
	if res != nil && res.NominatingInfo != nil && res.NominatingInfo.Mode() == fwk.ModeOverride {
		s.nominate(sp, res.NominatingInfo.NominatedNodeName)
	}
	// no-phantom judges the nomination as PostFilter leaves it: a victim waiting at Permit
	// gives its room back within the step, and the nomination then lasts until the next cycle.
	if n := sp.pod.Status.NominatedNodeName; n != "" && s.chk.nominationCovered(sp, n) {
		sp.nomOK = n
	}
}

// staleNomination nominates a pending pod to any node, as a nomination left over from an
// earlier cluster: a node since relabelled, another gang's room, a node of another domain
// than the pod's siblings'. Only a new leader reads them (restart).
func (s *sim) staleNomination(e composeEvent) {
	var pending []*simPod
	for _, sp := range s.pods {
		if sp.state == stActive || sp.state == stParked || sp.state == stGated {
			pending = append(pending, sp)
		}
	}
	if len(pending) == 0 || len(s.nodes) == 0 {
		return
	}
	s.nominate(pending[e.a%len(pending)], s.nodes[e.b%len(s.nodes)].Name)
}
