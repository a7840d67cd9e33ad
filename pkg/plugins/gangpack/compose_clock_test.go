package gangpack

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// The composition test's clock and event delivery: cluster events reach the parked pods'
// queueing hints, and the injected clock fires timers, Permit timeouts and deletions in order.

// podEvent delivers an assigned pod's add or deletion to the parked pods' hints.
func (s *sim) podEvent(o, n *v1.Pod, deleted bool) {
	s.deliver(s.podMoves(o, n, deleted))
}

// podMoves is the hints' verdict on an assigned pod's add or deletion for a parked pod.
func (s *sim) podMoves(o, n *v1.Pod, deleted bool) func(*simPod) bool {
	return func(sp *simPod) bool {
		var hint fwk.QueueingHint
		var err error
		if deleted {
			hint, err = podHint(true, s.pl.freesRoomFor)(klog.Background(), sp.pod, o, n)
		} else {
			hint, err = podHint(false, s.pl.protectionEnded)(klog.Background(), sp.pod, o, n)
		}
		return (sp.byGang && (err != nil || hint == fwk.Queue)) || (sp.byFit && deleted)
	}
}

// nodeEvent delivers a node add, update or deletion to the parked pods' hints.
func (s *sim) nodeEvent(o, n *v1.Node) {
	s.deliver(func(sp *simPod) bool {
		hint, err := s.pl.hintNodeChange(klog.Background(), sp.pod, o, n)
		return (sp.byGang && (err != nil || hint == fwk.Queue)) || (sp.byFit && n != nil)
	})
}

// deliver runs an event's hints (moves) for the parked and waiting pods, and keeps the event
// for the pod in its scheduling cycle: kube-scheduler records the events that arrive while a
// pod is in flight and, when its cycle fails, runs the hints of the plugins that rejected it
// on them; one that says Queue sends the pod to the active or backoff queue, not the
// unschedulable pool (requeueRejected).
func (s *sim) deliver(moves func(sp *simPod) bool) {
	for _, sp := range s.pods {
		switch {
		case sp == s.cycle:
			s.inflight = append(s.inflight, moves)
		case sp.state == stParked || sp.state == stWaiting || sp.state == stAllowed:
			if moves(sp) {
				s.wake(sp)
			}
		}
	}
}

// podGroupEvent delivers a PodGroup add, update or deletion: the plugin's informer handler
// and the queueing hint.
func (s *sim) podGroupEvent(o, n *schedv1alpha1.PodGroup) {
	if n != nil && (o == nil || podGroupChanged(o, n)) {
		s.pl.ledger.OnPodGroupChange(o, n)
	}
	var obj any = n
	if n == nil {
		obj = o
	}
	s.deliver(func(sp *simPod) bool {
		hint, err := s.pl.hintPodGroup(klog.Background(), sp.pod, nil, obj)
		return sp.byGang && (err != nil || hint == fwk.Queue)
	})
	s.afterPlugin()
}

// advance moves the clock by d: timers, Permit timeouts and graceful deletions fire in time
// order, then one GC tick runs when at least its interval passed.
func (s *sim) advance(d time.Duration) {
	end := s.now.Add(d)
	for {
		at, kind := end, ""
		due := func(t time.Time, k string) {
			if !t.After(at) {
				at, kind = t, k
			}
		}
		for _, tm := range s.timers {
			if tm.gen == s.gen {
				due(tm.at, "timer")
			}
		}
		for _, sp := range s.pods {
			switch sp.state {
			case stWaiting:
				due(sp.deadline, "permit")
			case stTerminating:
				due(sp.goneAt, "gone")
			}
		}
		if kind == "" {
			break
		}
		s.now = at
		s.fireAt(kind)
	}
	s.now = end
	if d >= time.Minute {
		s.pl.gcOnce(klog.Background())
		s.afterPlugin()
		s.settle()
	}
}

// fireAt runs everything due at s.now of the given kind.
func (s *sim) fireAt(kind string) {
	s.tracef("fire %s", kind)
	switch kind {
	case "timer":
		sort.Slice(s.timers, func(i, j int) bool {
			return s.timers[i].at.Before(s.timers[j].at) || (s.timers[i].at.Equal(s.timers[j].at) && s.timers[i].seq < s.timers[j].seq)
		})
		for i, tm := range s.timers {
			if tm.gen == s.gen && !tm.at.After(s.now) {
				s.timers = append(s.timers[:i:i], s.timers[i+1:]...)
				tm.f()
				break
			}
		}
	case "permit":
		for _, sp := range s.pods {
			if sp.state == stWaiting && !sp.deadline.After(s.now) {
				sp.waiter.Reject("", "rejected due to timeout")
			}
		}
	case "gone":
		for _, sp := range s.pods {
			if sp.state == stTerminating && !sp.goneAt.After(s.now) {
				s.removePod(sp)
			}
		}
	}
	s.afterPlugin()
	s.settle()
	s.chk.step("advance")
}

// nextDue returns how long until the next timer, Permit deadline or end of a graceful
// deletion (ok false: nothing is due).
func (s *sim) nextDue() (d time.Duration, ok bool) {
	due := func(t time.Time) {
		if !ok || t.Sub(s.now) < d {
			d, ok = t.Sub(s.now), true
		}
	}
	for _, tm := range s.timers {
		if tm.gen == s.gen {
			due(tm.at)
		}
	}
	for _, sp := range s.pods {
		switch sp.state {
		case stWaiting:
			due(sp.deadline)
		case stTerminating:
			due(sp.goneAt)
		case stActive:
			due(sp.backoff)
		}
	}
	return d, ok
}

// restart replaces the plugin with a fresh instance over the same API state, as a restarted
// process or a standby taking over after a failover: waiting and assumed pods are dropped
// like a dead process's (keeping the nominatedNodeName the old one published), every unbound
// pod is queued again, and the new instance's pod informer delivers every pod before its
// first cycle.
func (s *sim) restart() {
	for _, sp := range s.pods {
		switch sp.state {
		case stWaiting, stAllowed, stParked:
			sp.state, sp.woken = stActive, false
		}
	}
	s.start(s.h.factory)
	for _, sp := range s.pods {
		if sp.state != stGone {
			s.pl.memberEvent(nil, sp.pod)
			// The new instance inherits the nominations: no-phantom judges them after the
			// pod's next scheduling cycle.
			sp.nomOK = sp.pod.Status.NominatedNodeName
		}
	}
}
