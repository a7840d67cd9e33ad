package ledger

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// PreFilter's decisions, carried out: every new pin arms its deadline here (armDeadline), and a
// partner's pin is recorded with its group, so no caller can forget either.

// Choose pins the gang to the best-fitting domain of the request (placement.Store.Choose).
func (gs *Ledger) Choose(req placement.ChooseRequest, info gang.Info) placement.ChooseResult {
	res := gs.store.Choose(req)
	if res.OK && !res.Existing {
		gs.armDeadline(res.Commitment, info)
	}
	return res
}

// Pin pins the gang to one domain (placement.Store.Pin). A partner's new pin (group not
// empty) is recorded with its placement group, so that unwinding one partner unwinds all.
func (gs *Ledger) Pin(req placement.PinRequest, info gang.Info, group string) (placement.Commitment, placement.PinOutcome) {
	c, outcome := gs.store.Pin(req)
	if outcome == placement.Pinned {
		gs.armDeadline(c, info)
		if group != "" {
			gs.groups.record(group, c.Gang, c.ID)
		}
	}
	return c, outcome
}

// PinGroup pins every partner of a placement group at once, all or nothing, and records the
// group; infos[i] is the gang of reqs[i].
func (gs *Ledger) PinGroup(group string, reqs []placement.PinRequest, infos []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	cs, outcome, _ := gs.store.PinGroup(reqs)
	if outcome != placement.Pinned {
		return nil, outcome
	}
	for i, c := range cs {
		gs.armDeadline(c, infos[i])
		gs.groups.record(group, c.Gang, c.ID)
	}
	return cs, outcome
}

// Regrow raises a forming pin's remaining members (a placed member was lost).
func (gs *Ledger) Regrow(key string, id uint64, remaining int) (placement.Commitment, bool) {
	return gs.store.Regrow(key, id, remaining)
}

// Reserve replaces a forming pin's reserved room; room given back wakes the pods it refused.
func (gs *Ledger) Reserve(logger klog.Logger, key string, id uint64, r placement.Reservation, c placement.Capacity) bool {
	ok, gaveBack := gs.store.Reserve(key, id, r, c)
	if ok && gaveBack {
		gs.wakeBlocked(logger)
	}
	return ok
}

// FormingIn counts the forming pins of gangs whose key starts with prefix, but except.
func (gs *Ledger) FormingIn(prefix, except string) int {
	return gs.store.FormingWithPrefix(prefix, except)
}

// Failed returns the gang owner's failed domains under the key.
func (gs *Ledger) Failed(o placement.GangOwner, key string) map[string]struct{} {
	return gs.failed.Values(o, key)
}

// FailedHas reports whether the domain failed for the gang owner.
func (gs *Ledger) FailedHas(o placement.GangOwner, d placement.DomainRef) bool {
	return gs.failed.Has(o, d)
}

// Resting returns the gang owner's resting domains under the key.
func (gs *Ledger) Resting(o placement.GangOwner, key string) map[string]struct{} {
	return gs.failed.Resting(o, key)
}

// WrapFailed starts the gang owner's next lap over its failed domains (resting ones stay out).
func (gs *Ledger) WrapFailed(o placement.GangOwner) { gs.failed.Wrap(o) }

// Await parks waiter until awaited, an unplaced sibling it must follow, changes.
func (gs *Ledger) Await(awaited, waiter *v1.Pod) { gs.waits.add(awaited, waiter) }

// MembersMissing records that the gang waits for its members to exist.
func (gs *Ledger) MembersMissing(key string) { gs.incomplete.add(key) }

// MembersComplete records that every member of the gang exists; if it waited, its other
// members (but except) are woken and their number returned.
func (gs *Ledger) MembersComplete(logger klog.Logger, info gang.Info, except, trigger string) (woken int, waited bool) {
	if !gs.incomplete.remove(info.Key) {
		return 0, false
	}
	return gs.activateGang(logger, trigger, info.Namespace, info.Name, except), true
}

// GroupWaits records why the placement group waits and returns the previous reason, if any.
func (gs *Ledger) GroupWaits(group, why string) (prev string, had bool) {
	return gs.groupsWaiting.set(group, why)
}

// GroupReady forgets that the group waited and reports whether it did.
func (gs *Ledger) GroupReady(group string) bool { return gs.groupsWaiting.remove(group) }

// GroupAdmitted ends the group's record: every partner was admitted.
func (gs *Ledger) GroupAdmitted(group string) { gs.groups.forget(group) }

// AdmitWaiters allows the waiters of the gang's attempt id and returns how many.
func (gs *Ledger) AdmitWaiters(key string, id uint64) int {
	n := 0
	gs.forEachWaiter(key, id, func(wp fwk.WaitingPod) {
		gs.doubts.admit(wp.GetPod().UID)
		wp.Allow(gang.PluginName)
		n++
	})
	return n
}

// WakeBlocked wakes the pods refused because of a hold.
func (gs *Ledger) WakeBlocked(logger klog.Logger) { gs.wakeBlocked(logger) }

// AttemptOf returns the attempt a pod waits under at Permit.
func (gs *Ledger) AttemptOf(pod *v1.Pod) (uint64, bool) { return gs.attempts.get(gang.PodKey(pod)) }

// ReservedNode returns the node the member was reserved on, until it binds.
func (gs *Ledger) ReservedNode(uid types.UID) (string, bool) { return gs.reserved.get(uid) }

// Placed returns the gang's live members placed on the snapshot's nodes (see placedMembers).
func (gs *Ledger) Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	return gs.placedMembers(g, all)
}
