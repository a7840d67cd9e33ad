package ledger

import (
	"k8s.io/klog/v2"

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

// WrapFailed starts the gang owner's next lap over its failed domains (resting ones stay out).
func (l *Ledger) WrapFailed(o placement.GangOwner) { l.failed.Wrap(o) }
