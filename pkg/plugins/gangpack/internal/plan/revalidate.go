package plan

import (
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Stale-pin causes (gangpack.pinGang.stale_replan cause field).
const (
	staleDomainGone     = "domain_gone"
	staleNoRoom         = "no_room"
	staleCommittedEmpty = "committed_empty"
	staleMemberMoved    = "member_moved"
)

// pinDecision is revalidation's verdict on a gang's existing pin. Deciding reads only; every
// release, unwind, count and log follows from the decision in dropPin.
type pinDecision struct {
	keep bool
	// remaining, when above the kept pin's, is what its remaining must be raised to.
	remaining int
	// Drop is how the pin is dropped when it is not kept.
	gang.Drop
	// msg is the status text when members waiting under the pin were rejected.
	msg string
}

// revalidate checks the gang's existing pin against what the cluster says now. It returns the
// pin to keep (nil when there is none or it was dropped), or the status that ends the cycle
// because members waiting under a dropped pin were rejected.
func (p *cycle) revalidate(pin *placement.Commitment) (*placement.Commitment, *fwk.Status) {
	if pin == nil {
		return nil, nil
	}
	c := *pin
	d := p.checkPin(c)
	if d.keep {
		if d.remaining > c.Remaining {
			p.regrow(&c, d.remaining)
		}
		return &c, nil
	}
	return nil, p.drop(c, d)
}

// checkPin decides, without planning, whether the pin still stands.
func (p *cycle) checkPin(c placement.Commitment) pinDecision {
	key, info := p.info.Key, p.info
	switch {
	case c.Owner != info.UID:
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseOwnerChange, Always: true, ClearOwner: true}, msg: msg.OwnerReleased(key)}
	case c.Key != info.TopologyKey:
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseTopologyChange, Always: true, NewKey: info.TopologyKey}, msg: msg.TopologyReleased(key)}
	case c.Forming() && c.MinMember > 0 && c.MinMember != info.MinMember:
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseMinMemberChange}, msg: msg.MinMemberReleased(key)}
	case p.memberOutside(c.Domain) || p.outsideWithin(c.Within):
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleMemberMoved}, msg: msg.StaleReleased(c.Domain, key)}
	case c.Forming() && p.waiterNodeGone(c.ID):
		// Admitting the waiter would bind it to a node that no longer exists. Rejecting only
		// that waiter would not save the attempt (its Unreserve unwinds it), so the attempt is
		// unwound here, at once, and the gang re-plans from the members still placed.
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleMemberMoved}, msg: msg.StaleReleased(c.Domain, key)}
	case !c.Forming() && len(p.placed) < info.MinMember:
		// A committed gang that lost members forms again: its pin is replanned from the
		// members still placed (a Terminating member is not one).
		d := pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin}}
		if len(p.placed) == 0 {
			d.Stale = staleCommittedEmpty
		}
		return d
	}
	// A forming gang keeps placed + remaining ≥ minMember: a member placed under the attempt
	// that went away (Terminating, failed, its node gone) must be replaced before the gang
	// commits, or the drains still counted would commit it short.
	if need := info.MinMember - len(p.placed); c.Forming() && need > c.Remaining {
		return pinDecision{keep: true, remaining: need}
	}
	return pinDecision{keep: true}
}

// regrow raises the kept forming pin's remaining to the members the gang still needs.
func (p *cycle) regrow(c *placement.Commitment, remaining int) {
	grown, ok := p.fx.Regrow(c.Gang, c.ID, remaining)
	if !ok {
		return
	}
	p.logger.V(4).Info("gangpack.pinGang.member_lost", "pod", klog.KObj(p.pod), "gang", c.Gang, "domain", c.Domain,
		"placed", len(p.placed), "oldRemaining", c.Remaining, "remaining", grown.Remaining)
	*c = grown
}

// waiterNodeGone reports a member waiting at Permit under attempt id whose node is no longer
// in the snapshot (the node was deleted).
func (p *cycle) waiterNodeGone(id uint64) bool {
	infos := p.pl.nodes()
	for _, node := range p.pl.read.WaiterNodes(p.info, id) {
		if ni, err := infos.Get(node); err != nil || ni.Node() == nil {
			return true
		}
	}
	return false
}

// memberOutside reports a live placed member whose node is not (or no longer) in domain: a
// node relabelled while the gang forms must not let the next member complete the gang in the
// old domain.
func (p *cycle) memberOutside(domain string) bool {
	for _, m := range p.placed {
		if m.Domain != domain {
			return true
		}
	}
	return false
}

// staleByRoom decides, from the plan of the pinned domain, whether the pin went stale: the
// domain vanished, or nothing is placed in it and it has no room for the gang any more (and
// it is not a domain the gang preempted for, whose victims still terminate).
func (p *cycle) staleByRoom(c placement.Commitment, plans map[string]*topology.DomainPlan) (pinDecision, bool) {
	dp := plans[c.Domain]
	switch {
	case dp == nil || len(dp.Nodes) == 0:
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleDomainGone}, msg: msg.StaleReleased(c.Domain, p.info.Key)}, true
	case p.placedIn(c.Domain) == 0 && dp.Room < p.need && !p.pl.awaitingVictims(p.info.Key, c.Domain):
		// A domain freed by preemption lacks room until its victims are gone: kept.
		return pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleNoRoom}, msg: msg.StaleReleased(c.Domain, p.info.Key)}, true
	}
	return pinDecision{}, false
}

// drop has the ledger drop the pin; the cycle ends with the decision's message when members
// waiting under the pin were rejected.
func (p *cycle) drop(c placement.Commitment, d pinDecision) *fwk.Status {
	if p.fx.Drop(p.logger, c, d.Drop) {
		return fwk.NewStatus(fwk.Unschedulable, d.msg)
	}
	return nil
}

func (p *cycle) placedIn(domain string) int {
	n := 0
	for _, m := range p.placed {
		if m.Domain == domain {
			n++
		}
	}
	return n
}
