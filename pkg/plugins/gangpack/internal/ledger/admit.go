package ledger

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Permit: the gang's all-or-nothing gate (Permit), the supervisor of a waiter the framework
// has not registered yet, and the admission of a placement group's partners.

// PermitDeadlineMargin is how close to the end of a waiter's Permit wait the gang is no longer
// admitted (waitEndsSoon).
const PermitDeadlineMargin = time.Second

// waitEndsSoon reports whether a member waiting under the pin's attempt reaches the end of its
// Permit wait within PermitDeadlineMargin. kube-scheduler's timer rejects such a member on its
// own, possibly while the completing member allows the others, which would bind part of the
// gang; refusing the completing member instead unwinds the whole attempt (its Unreserve). The
// wait is measured from the waiter's Permit, a little before kube-scheduler starts its timer.
func (l *Ledger) waitEndsSoon(info gang.Info, id uint64) bool {
	limit := l.now().Add(PermitDeadlineMargin - info.Timeout)
	soon := false
	l.forEachWaiter(info.Key, id, func(wp fwk.WaitingPod) {
		if at, ok := l.attempts.since(gang.PodKey(wp.GetPod()), id); ok && !at.After(limit) {
			soon = true
		}
	})
	return soon
}

// waiterRegistration bounds how long superviseWaiter looks for the framework's waiting pod.
const waiterRegistration = 30 * time.Second

// superviseWaiter closes the window between Permit returning Wait and the framework
// registering the waiting pod: an unwind in that window (a sibling's timeout or deletion, GC,
// an expired hold) cannot see the waiter, and the member would wait out its whole timeout
// under a dead attempt while its siblings re-plan without it. Once the waiter is registered,
// it is rejected if its attempt no longer owns the gang's pin, and admitted if the attempt
// committed meanwhile (and admit, a placement group's check, agrees). It stops as soon as the pod's attempt record changes (the pod bound or
// was unreserved).
func (l *Ledger) superviseWaiter(pod *v1.Pod, key string, id uint64, admit func() bool) {
	var wp fwk.WaitingPod
	// The plugin's context, not the cycle's: the framework cancels the cycle's context when
	// the scheduling cycle ends, possibly before this goroutine first runs.
	_ = wait.PollUntilContextTimeout(l.ctx, time.Millisecond, waiterRegistration, true, func(context.Context) (bool, error) {
		if got, ok := l.attempts.get(gang.PodKey(pod)); !ok || got != id {
			return true, nil
		}
		wp = l.handle.GetWaitingPod(pod.UID)
		return wp != nil, nil
	})
	if wp == nil {
		return
	}
	switch owned, committed := l.store.Committed(key, id); {
	case !owned:
		wp.Reject(gang.PluginName, msg.Unwound(key))
		l.logger.V(4).Info("gangpack.Permit.late_waiter_rejected", "pod", klog.KObj(pod), "key", key)
	case committed && admit():
		l.doubts.admit(pod.UID)
		wp.Allow(gang.PluginName)
	}
}

// MarkAdmitted marks a pod Permit admitted: a failed binding from now on leaves its node in
// doubt.
func (l *Ledger) MarkAdmitted(uid types.UID) { l.doubts.admit(uid) }

// Outcome is what Permit decided for a member.
type Outcome int

const (
	// Reject: the member is refused (Verdict.Msg says why).
	Reject Outcome = iota
	// Wait: the member waits at Permit for its gang (or its placement group) to commit.
	Wait
	// Admit: the member completed the gang; every waiter of its attempt was allowed.
	Admit
)

// Verdict is Permit's decision for one member.
type Verdict struct {
	Outcome Outcome
	Msg     string // why a member is rejected
}

// Permit is the gang's all-or-nothing gate for a member of attempt id, in this order:
//
//  1. record the member's attempt (enterPermit): an unwind from now on finds the pod by it, as
//     a waiter or, before the framework registers the waiter, through its supervisor; an
//     attempt that lost its pin is rejected;
//  2. wake the member, the siblings parked behind it and, on the attempt's first Permit, the
//     gang (wakeForPermit);
//  3. while the gang is not committed, or admitGroup (a placement group's check that every
//     partner is committed) refuses: supervise the waiter (superviseWaiter) and Wait;
//  4. otherwise, when a waiter's Permit wait ends within PermitDeadlineMargin (waitEndsSoon),
//     unwind the attempt and reject the member: the attempt is committed, and a waiter's
//     supervisor would otherwise admit it in between;
//  5. otherwise, when the member's node or a waiter's node left the gang's domain (outside: the
//     node informer saw it relabelled or deleted after the cycle's snapshot), unwind the
//     attempt and reject the member: the gang plans again instead of binding across domains;
//  6. otherwise allow every waiter of the attempt and mark them and the member admitted.
//
// The caller admits a placement group's partners (AdmitWaiters) after an Admit.
func (l *Ledger) Permit(logger klog.Logger, pod *v1.Pod, info gang.Info, id uint64, admitGroup func() bool, outside func(node string) bool) Verdict {
	owned, committed := l.enterPermit(pod, info.Key, id)
	if !owned {
		return Verdict{Outcome: Reject, Msg: msg.Unwound(info.Key)}
	}
	l.wakeForPermit(logger, pod, info, id)
	if !committed || !admitGroup() {
		l.spawn(func() { l.superviseWaiter(pod, info.Key, id, admitGroup) })
		return Verdict{Outcome: Wait}
	}
	if l.waitEndsSoon(info, id) {
		logger.V(4).Info("gangpack.Permit.deadline_guard", "pod", klog.KObj(pod), "gang", info.Key, "margin", PermitDeadlineMargin)
		l.UnwindOnUnreserve(logger, info, id)
		return Verdict{Outcome: Reject, Msg: msg.WaitEndsSoon(info.Key)}
	}
	if node := l.nodeOutside(pod, info.Key, id, outside); node != "" {
		logger.V(4).Info("gangpack.Permit.node_left_domain", "pod", klog.KObj(pod), "gang", info.Key, "node", node)
		l.UnwindOnUnreserve(logger, info, id)
		return Verdict{Outcome: Reject, Msg: msg.NodeLeftDomain(node, info.Key)}
	}
	l.admitAttempt(pod, info.Key, id)
	return Verdict{Outcome: Admit}
}

// enterPermit records the member's attempt and reports whether the attempt still owns the
// gang's pin and whether the gang committed. An attempt that lost its pin is forgotten again.
func (l *Ledger) enterPermit(pod *v1.Pod, key string, id uint64) (owned, committed bool) {
	l.attempts.set(gang.PodKey(pod), id, l.now())
	owned, committed = l.store.Committed(key, id)
	if !owned {
		l.attempts.forgetIf(gang.PodKey(pod), id)
	}
	return owned, committed
}

// nodeOutside returns the node of pod or of a waiter of the gang's attempt id for which
// outside holds, "" when there is none (or outside is nil).
func (l *Ledger) nodeOutside(pod *v1.Pod, key string, id uint64, outside func(string) bool) string {
	if outside == nil {
		return ""
	}
	uids := []types.UID{pod.UID}
	l.forEachWaiter(key, id, func(wp fwk.WaitingPod) { uids = append(uids, wp.GetPod().UID) })
	for _, uid := range uids {
		if node, ok := l.reserved.get(uid); ok && outside(node) {
			return node
		}
	}
	return ""
}

// admitAttempt allows every waiter of the gang's attempt id and marks them, and pod, admitted.
func (l *Ledger) admitAttempt(pod *v1.Pod, key string, id uint64) {
	l.forEachWaiter(key, id, func(wp fwk.WaitingPod) {
		l.doubts.admit(wp.GetPod().UID)
		wp.Allow(gang.PluginName)
	})
	l.doubts.admit(pod.UID)
}

// GroupAdmitted ends the group's record: every partner was admitted.
func (l *Ledger) GroupAdmitted(group string) { l.groups.forget(group) }

// AdmitWaiters allows the waiters of the gang's attempt id and returns how many.
func (l *Ledger) AdmitWaiters(key string, id uint64) int {
	n := 0
	l.forEachWaiter(key, id, func(wp fwk.WaitingPod) {
		l.doubts.admit(wp.GetPod().UID)
		wp.Allow(gang.PluginName)
		n++
	})
	return n
}
