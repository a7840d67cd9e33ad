package ledger

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// PreFilter's decisions, carried out: every new pin arms its deadline here (armDeadline), and a
// partner's pin is recorded with its group, so no caller can forget either.

// Choose pins the gang to the best-fitting domain of the request (placement.Store.Choose).
func (l *Ledger) Choose(req placement.ChooseRequest, info gang.Info) placement.ChooseResult {
	res := l.store.Choose(req)
	if res.OK && !res.Existing {
		l.armDeadline(res.Commitment, info)
	}
	return res
}

// Pin pins the gang to one domain (placement.Store.Pin). A partner's new pin (group not
// empty) is recorded with its placement group, so that unwinding one partner unwinds all.
func (l *Ledger) Pin(req placement.PinRequest, info gang.Info, group string) (placement.Commitment, placement.PinOutcome) {
	c, outcome := l.store.Pin(req)
	if outcome == placement.Pinned {
		l.armDeadline(c, info)
		if group != "" {
			l.groups.record(group, c.Gang, c.ID)
		}
	}
	return c, outcome
}

// PinGroup pins every partner of a placement group at once, all or nothing, and records the
// group; infos[i] is the gang of reqs[i].
func (l *Ledger) PinGroup(group string, reqs []placement.PinRequest, infos []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	cs, outcome, _ := l.store.PinGroup(reqs)
	if outcome != placement.Pinned {
		return nil, outcome
	}
	for i, c := range cs {
		l.armDeadline(c, infos[i])
		l.groups.record(group, c.Gang, c.ID)
	}
	return cs, outcome
}

// Regrow raises a forming pin's remaining members (a placed member was lost).
func (l *Ledger) Regrow(key string, id uint64, remaining int) (placement.Commitment, bool) {
	return l.store.Regrow(key, id, remaining)
}

// Reserve replaces a forming pin's reserved room; room given back wakes the pods it refused.
func (l *Ledger) Reserve(logger klog.Logger, key string, id uint64, r placement.Reservation, c placement.Capacity) bool {
	ok, gaveBack := l.store.Reserve(key, id, r, c)
	if ok && gaveBack {
		l.wakeBlocked(logger)
	}
	return ok
}

// FormingIn counts the forming pins of gangs whose key starts with prefix, but except.
func (l *Ledger) FormingIn(prefix, except string) int {
	return l.store.FormingWithPrefix(prefix, except)
}

// Failed returns the gang owner's failed domains under the key.
func (l *Ledger) Failed(o placement.GangOwner, key string) map[string]struct{} {
	return l.failed.Values(o, key)
}

// FailedHas reports whether the domain failed for the gang owner.
func (l *Ledger) FailedHas(o placement.GangOwner, d placement.DomainRef) bool {
	return l.failed.Has(o, d)
}

// Resting returns the gang owner's resting domains under the key.
func (l *Ledger) Resting(o placement.GangOwner, key string) map[string]struct{} {
	return l.failed.Resting(o, key)
}

// WrapFailed starts the gang owner's next lap over its failed domains (resting ones stay out).
func (l *Ledger) WrapFailed(o placement.GangOwner) { l.failed.Wrap(o) }

// Await parks waiter until awaited, an unplaced sibling it must follow, changes.
func (l *Ledger) Await(awaited, waiter *v1.Pod) { l.waits.add(awaited, waiter) }

// MembersMissing records that the gang waits for its members to exist.
func (l *Ledger) MembersMissing(key string) { l.incomplete.add(key) }

// MembersComplete records that every member of the gang exists; if it waited, its other
// members (but except) are woken and their number returned.
func (l *Ledger) MembersComplete(logger klog.Logger, info gang.Info, except, trigger string) (woken int, waited bool) {
	if !l.incomplete.remove(info.Key) {
		return 0, false
	}
	return l.activateGang(logger, trigger, info.Namespace, info.Name, except), true
}

// GroupWaits records why the placement group waits and returns the previous reason, if any.
func (l *Ledger) GroupWaits(group, why string) (prev string, had bool) {
	return l.groupsWaiting.set(group, why)
}

// GroupReady forgets that the group waited and reports whether it did.
func (l *Ledger) GroupReady(group string) bool { return l.groupsWaiting.remove(group) }

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

// WaiterNodes returns the nodes the gang's unbound members waiting under attempt id were
// reserved on (none when the members cannot be listed).
func (l *Ledger) WaiterNodes(g gang.Info, id uint64) []string {
	pods, err := l.members.List(g.Namespace, g.Name)
	if err != nil {
		return nil
	}
	var out []string
	for _, q := range pods {
		if got, ok := l.attempts.get(gang.PodKey(q)); !ok || got != id || q.Spec.NodeName != "" {
			continue
		}
		if node, ok := l.reserved.get(q.UID); ok {
			out = append(out, node)
		}
	}
	return out
}

// Placed returns the gang's live members placed on the snapshot's nodes (see placedMembers).
func (l *Ledger) Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed {
	return l.placedMembers(g, all)
}

// Read is planning's first look at a gang in a cycle, in the order planning used to ask:
// the hold generation, the other gangs' reservations, the gang's placed members, its pin,
// then its owner's failed domains and the clock. Within the cycle only planning's own
// decisions change them, and it asks again where one does (a wrapped lap).
func (l *Ledger) Read(g gang.Info, all []fwk.NodeInfo) gang.Reading {
	r := gang.Reading{Generation: l.store.Generation(), Others: l.store.ReservedExcept(g.Key), Placed: l.placedMembers(g, all),
		Failed: l.failed.Values(g.Owner(), g.TopologyKey), Now: l.now()}
	if c, ok := l.store.Get(g.Key); ok {
		r.Pin = &c
	}
	return r
}
