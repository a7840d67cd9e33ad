package plan

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// choose is the last planning step: it plans the gang over the node set its situation allows
// (the pinned domain, the placed members' domain, or every node) and narrows the framework to
// the candidates of the chosen domain.
func (p *cycle) choose(cs fwk.CycleState, c *placement.Commitment) (*fwk.PreFilterResult, *fwk.Status) {
	p.buildGang()
	if st := p.deviceStatus(); st != nil {
		return nil, st
	}
	for c != nil {
		plans := p.planOver(inside(p.nodesOfDomain(c.Key, c.Domain), c.Within))
		p.logEnter(plans, c.Domain)
		d, stale := p.staleByRoom(*c, plans)
		if !stale {
			p.reReserve(c)
			if dp := plans[c.Domain]; len(p.placed) > 0 && dp.Room < p.need {
				p.shortOnReserved(c.Domain)
				return nil, p.short(cs, msg.PinnedShort(c.Domain, p.info.Key, dp.Room, p.need), c.Domain, dp.Room)
			}
			return p.narrow(cs, plans, *c, "existing")
		}
		if st := p.drop(*c, d); st != nil {
			return nil, st
		}
		c = nil
		if p.info.Group != nil && len(p.placed) == 0 && !p.groupPlanned {
			// A partner whose pin went stale re-plans with its group, as one without a pin
			// does (plan): planned alone, it would ignore the group domain its partners fix.
			var st *fwk.Status
			if c, st = p.placeGroup(); st != nil {
				return nil, st
			}
		}
	}
	if len(p.placed) > 0 {
		within, st := p.placedWithin()
		if st != nil {
			return nil, st
		}
		plans := p.planOver(inside(p.nodesOfDomain(p.info.TopologyKey, p.placed[0].Domain), within))
		p.logEnter(plans, "")
		return p.adopt(cs, plans, within)
	}
	plans := p.planAll()
	p.logEnter(plans, "")
	if st := p.deviceStatus(); st != nil {
		return nil, st
	}
	if gang.HardSpread(p.pod) {
		return p.deferredPlan(cs, plans)
	}
	return p.bestFit(cs, plans)
}

func (p *cycle) logEnter(plans map[string]*topology.DomainPlan, pinnedDomain string) {
	if v := p.logger.V(4); v.Enabled() { // the room map is built only when it is logged
		v.Info("gangpack.pinGang.enter", "pod", klog.KObj(p.pod), "gang", p.info.Key, "topologyKey", p.info.TopologyKey,
			"need", p.need, "placed", len(p.placed), "pinnedDomain", pinnedDomain, "room", topology.Rooms(plans))
	}
}

// planAll plans over every snapshot node and records the quality gauges of that planning.
func (p *cycle) planAll() map[string]*topology.DomainPlan {
	if plans, ok := p.planAllCached(); ok {
		return plans
	}
	nodes := p.topologyNodes(p.all, false, nil)
	p.tnodes = nodes
	plans := topology.Plan(&p.gang, nodes)
	p.recordQuality(nodes)
	return plans
}

// narrow restricts the framework to the candidates of the pinned domain.
func (p *cycle) narrow(cs fwk.CycleState, plans map[string]*topology.DomainPlan, c placement.Commitment, source string) (*fwk.PreFilterResult, *fwk.Status) {
	dp := plans[c.Domain]
	if dp == nil || len(dp.Candidates) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.NoFeasibleNode(c.Domain, p.info.Key))
	}
	cands := sets.New(dp.Candidates...)
	p.pinSource = source
	cs.Write(PinStateKey, &Pin{Gang: p.info, Domain: c.Domain, ID: c.ID, SoleFit: c.SoleFit, Within: c.Within, Surplus: !c.Forming(), Candidates: cands})
	p.logger.V(4).Info("gangpack.pinGang.result", "pod", klog.KObj(p.pod), "gang", p.info.Key, "topologyKey", c.Key,
		"domain", c.Domain, "source", source, "need", p.need, "remaining", c.Remaining, "candidates", len(dp.Candidates),
		"preference", p.prefs[c.Domain])
	return &fwk.PreFilterResult{NodeNames: cands}, nil
}

// bestFit pins the domain with the least room that fits the gang, skipping domains held by
// other gangs and (until the lap wraps) the gang's failed domains.
func (p *cycle) bestFit(cs fwk.CycleState, plans map[string]*topology.DomainPlan) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	if st := p.holdCapped(); st != nil {
		return nil, st
	}
	rooms := topology.Rooms(plans)
	failed := p.failed
	req := p.chooseRequest(topology.Without(rooms, failed))
	res := p.fx.Choose(req, info)
	if !res.OK && !res.Existing && !res.Conflict && len(req.Rooms) < len(rooms) {
		p.fx.WrapFailed(info.Owner()) // the lap wraps; resting domains stay out
		failed = pl.read.Failed(info.Owner(), info.TopologyKey)
		req = p.chooseRequest(topology.Without(rooms, failed))
		res = p.fx.Choose(req, info)
	}
	if res.OK {
		source := "pinned"
		if !res.Existing {
			if p.preferredOverBestFit(req, res.Commitment.Domain) {
				source = "preferred"
			}
			metrics.CountPin(source)
		}
		return p.narrow(cs, plans, res.Commitment, source)
	}
	if st := p.resting(rooms, failed); st != nil {
		return nil, st
	}
	return nil, p.noFit(rooms, failed, "")
}

// chooseRequest is best fit's request over rooms (failed domains left out already): the
// domains' preferences (prefer.go) first, soft spread's rank among the most preferred
// domains that tie with their best fit.
func (p *cycle) chooseRequest(rooms map[string]int) placement.ChooseRequest {
	info := p.info
	p.prefs = p.preferences(rooms)
	return placement.ChooseRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Need: p.need,
		MinMember: info.MinMember, Reserve: p.reservation, Capacity: p.capacity(), Rooms: rooms,
		Prefer: preferOf(p.prefs), Rank: p.softSpreadRank(topPreferred(rooms, p.need, p.prefs))}
}

// preferredOverBestFit reports whether the request's preferences chose domain over the
// domain best fit alone would have chosen (recorded in bestFitAlone).
func (p *cycle) preferredOverBestFit(req placement.ChooseRequest, domain string) bool {
	if req.Prefer == nil {
		return false
	}
	d, ok := topology.BestFitRanked(req.Rooms, req.Need, req.Rank)
	p.bestFitAlone = d
	return ok && d != domain
}

// adopt pins the domain the placed members already sit in (inside their group domain, within,
// for a partner). While that domain lacks room the pin holds it, so the room freed there goes
// to this gang; once such a hold has expired (the domain is a failed domain of the gang), the
// gang waits for room without holding again. An adopted partner joins its group's record, so
// that its unwind unwinds its partners.
func (p *cycle) adopt(cs fwk.CycleState, plans map[string]*topology.DomainPlan, within placement.DomainRef) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	d := p.placed[0].Domain
	room := 0
	if dp := plans[d]; dp != nil {
		room = dp.Room
	}
	if room < p.need && pl.read.FailedHas(info.Owner(), placement.DomainRef{Key: info.TopologyKey, Value: d}) {
		return nil, p.short(cs, msg.AdoptedShort(d, info.Key, room, p.need), d, room)
	}
	if room < p.need && p.rawRooms(map[string]int{d: room})[d] >= p.need {
		// The room is there but another forming gang reserved it: wait for it.
		return nil, p.adoptBlocked(d)
	}
	remaining := max(info.MinMember-len(p.placed), 0)
	if remaining > 0 {
		if st := p.holdCapped(); st != nil {
			return nil, st
		}
	}
	group := ""
	if info.Group != nil {
		group = info.Group.Key
	}
	c, outcome := p.fx.Pin(placement.PinRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Domain: d,
		Reserved: p.reservation(d), Capacity: p.capacity(), Remaining: remaining, SoleFit: true, MinMember: info.MinMember,
		Within: within}, info, group)
	switch outcome {
	case placement.HeldByOther:
		return nil, p.adoptBlocked(d)
	case placement.Pinned:
		metrics.CountPin(metrics.PinAdopted)
	}
	if room < p.need {
		return nil, p.short(cs, msg.AdoptedShort(d, info.Key, room, p.need), d, room)
	}
	return p.narrow(cs, plans, c, "adopted")
}

// holdCapped returns the status that parks the gang when its namespace already has as many
// forming gangs holding domains as maxHoldsPerNamespace allows (nil when under the cap, or
// the gang is pinned already). The pod is woken when a hold ends.
func (p *cycle) holdCapped() *fwk.Status {
	if !p.pl.atHoldCap(p.info) || p.pl.read.Pinned(p.info.Key) {
		return nil
	}
	n := p.pl.read.FormingIn(p.info.Namespace+"/", p.info.Key)
	p.waitForRoom()
	p.logger.V(4).Info("gangpack.pinGang.hold_cap", "pod", klog.KObj(p.pod), "gang", p.info.Key, "holds", n, "limit", p.pl.args.HoldCap())
	return fwk.NewStatus(fwk.Unschedulable, msg.HoldCap(p.info.Namespace, n))
}

// PinStateKey holds the cycle's pin, written by narrow (and by Reserve for a deferred plan).
const PinStateKey fwk.StateKey = "gangpack.pin"

// Pin is the cycle pin: this member goes to Domain (inside Within, for a partner of a
// placement group) under attempt ID. Absent for standalone pods and for a spread anchor until
// Reserve pins its deferred plan. Surplus marks a member planned under a pin that was
// already committed: the gang formed without it, so its failure unwinds nothing.
type Pin struct {
	Gang    gang.Info
	Domain  string
	ID      uint64
	SoleFit bool
	Within  placement.DomainRef
	Surplus bool
	// Candidates are the nodes PreFilter narrowed the cycle to (nil: no narrowing). Filter
	// enforces them too: kube-scheduler evaluates a pod's nominated node with Filter alone,
	// before and regardless of the PreFilter result.
	Candidates sets.Set[string]
}

func (s *Pin) Clone() fwk.StateData { return s }

// ReadPin returns the cycle's pin, nil when the pod has none.
func ReadPin(cs fwk.CycleState) *Pin {
	p, _ := gang.ReadState[*Pin](cs, PinStateKey)
	return p
}

// atHoldCap reports whether the gang's namespace already has as many forming gangs as
// maxHoldsPerNamespace allows: the gang could not hold a freed domain.
func (pl *Planner) atHoldCap(info gang.Info) bool {
	limit := pl.args.HoldCap()
	return limit > 0 && pl.read.FormingIn(info.Namespace+"/", info.Key) >= limit
}
