package gangpack

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The composition test's attempts as they end: deletions, Permit verdicts, requeues, and what
// the plugin did through the handle (activations, evictions).

// removePod deletes the pod from the API; an assigned pod's deletion is a cluster event.
func (s *sim) removePod(sp *simPod) {
	wasOn := sp.state == stBound || sp.state == stTerminating
	nominated := pendingPod(sp) && sp.pod.Status.NominatedNodeName != ""
	if sp.state == stWaiting {
		sp.waiter.Reject("", "pod deleted")
	}
	s.settle()
	// An admitted pod's binding fails once the pod is gone. kube-scheduler's
	// handleBindingCycleError then runs Unreserve, forgets the assumed pod and, since the
	// assumed pod held room in the cache, moves the parked pods with AssignedPodDelete for
	// the assumed pod (spec.nodeName set), as for any failed binding (bind).
	var forgotten *v1.Pod
	if sp.state == stAllowed {
		s.pl.Unreserve(s.ctx, sp.cs, sp.copy, sp.node)
		forgotten = assumed(sp.pod, sp.node)
	}
	s.unwait(sp)
	sp.state = stGone
	s.resnap()
	if err := s.podInf.GetIndexer().Delete(sp.pod); err != nil {
		s.t.Fatal(err)
	}
	s.tracef("%s deleted", sp.pod.Name)
	s.doubts.OnDelete(sp.pod)
	switch {
	case wasOn:
		s.podEvent(sp.pod, nil, true)
		s.claimFreed(sp)
	case forgotten != nil:
		s.podEvent(forgotten, nil, true)
	case nominated: // eventhandlers.go:369-375
		s.nominationGone(sp.pod)
	}
	s.afterPlugin()
}

// settle resolves Permit verdicts until none changes: an admitted waiter goes on to
// binding; a rejected one is unreserved (which may reject more) and requeued.
func (s *sim) settle() {
	for changed := true; changed; {
		changed = false
		for _, sp := range s.pods {
			if sp.state != stWaiting {
				continue
			}
			switch v := sp.waiter.now(); v {
			case "":
			case "allowed":
				s.admitted(sp)
				changed = true
			default: // WaitOnPermit rejected: handleBindingCycleError (schedule_one.go:357-388)
				s.unassume(sp)
				s.pl.Unreserve(s.ctx, sp.cs, sp.copy, sp.node)
				s.podEvent(assumed(sp.pod, sp.node), nil, true)
				s.failureHandler(sp, sp.copy)
				s.requeueRejected(sp, true, false)
				changed = true
			}
		}
		s.afterPlugin()
	}
}

// admitted moves a pod Permit let through to binding.
func (s *sim) admitted(sp *simPod) {
	sp.state = stAllowed
	s.unwait(sp)
	s.chk.admitted(sp)
}

func (s *sim) unwait(sp *simPod) {
	s.h.mu.Lock()
	delete(s.h.waiting, sp.pod.UID)
	s.h.mu.Unlock()
}

// unassume forgets the pod's assumed node (the cache's ForgetPod). Whether the pod's
// nomination is cleared is the failure handler's business (failureHandler).
func (s *sim) unassume(sp *simPod) {
	s.unwait(sp)
	sp.state = stActive
	s.resnap()
}

// requeueRejected puts a pod whose cycle failed back in the queue: active when it was
// activated or a hinted event arrived while it was in flight, else parked.
func (s *sim) requeueRejected(sp *simPod, byGang, byFit bool) {
	sp.byGang, sp.byFit = byGang, byFit
	sp.failures++
	sp.backoff = s.now.Add(min(time.Second<<min(sp.failures-1, 4), 10*time.Second))
	if sp == s.cycle {
		for _, moves := range s.inflight {
			sp.woken = sp.woken || moves(sp)
		}
		s.inflight = nil
	}
	if sp.woken {
		sp.state, sp.woken = stActive, false
		return
	}
	sp.state = stParked
}

// afterPlugin applies what the plugin did through the handle: activations and evictions.
func (s *sim) afterPlugin() {
	for len(s.spawned) > 0 {
		f := s.spawned[0]
		s.spawned = s.spawned[1:]
		f()
	}
	s.h.mu.Lock()
	act := s.h.activated
	s.h.activated = nil
	evs := s.h.events[s.eventSeen:]
	s.eventSeen = len(s.h.events)
	s.h.mu.Unlock()
	for _, k := range act {
		if sp := s.byKey(k); sp != nil {
			sp.backoff = s.now
			s.wake(sp)
		}
	}
	for _, e := range evs {
		if e.reason != "Preempted" {
			continue
		}
		if sp := s.byKey(e.regarding); sp != nil {
			s.tracef("%s evicted (state %d on %s): %s", sp.pod.Name, sp.state, sp.node, e.note)
			s.chk.evicted(sp, e.note)
			if s.flushFreed != nil {
				s.flushFreed[sp.node] = true
			}
			s.countDeviceEviction(sp, e.note)
			switch sp.state {
			case stBound:
				s.terminate(sp, 60)
			case stAllowed:
				s.removePod(sp)
			}
		}
	}
}

// wake moves a parked pod to the active queue, or marks an in-flight one.
func (s *sim) wake(sp *simPod) {
	switch {
	case sp.state == stParked:
		sp.state = stActive
		s.tracef("%s woken", sp.pod.Name)
	case sp.state == stWaiting || sp.state == stAllowed || sp == s.cycle:
		sp.woken = true
	}
}

func (s *sim) byKey(k string) *simPod {
	for i := len(s.pods) - 1; i >= 0; i-- {
		if sp := s.pods[i]; sp.pod.Namespace+"/"+sp.pod.Name == k && sp.state != stGone {
			return sp
		}
	}
	return nil
}

// terminate starts a graceful deletion of a bound pod. As the API server does, it sets the
// deletionTimestamp to the end of the grace period, on the simulated clock (the plugin judges
// how long a Terminating pod's room is still coming back from it).
func (s *sim) terminate(sp *simPod, grace int) {
	q := sp.pod.DeepCopy()
	q.DeletionTimestamp = ptr.To(metav1.NewTime(s.now.Add(time.Duration(grace) * time.Second)))
	q.DeletionGracePeriodSeconds = ptr.To(int64(grace))
	sp.state, sp.goneAt = stTerminating, s.now.Add(time.Duration(grace)*time.Second)
	s.updatePod(sp, q)
	s.resnap()
}
