package plan

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The statuses of a gang choose cannot pin now, each counted, logged and (where room may
// come back) parked until it does: no domain has room, the only fitting domains rest, or the
// placed members' domain has room only inside other gangs' reservations.

// noFit returns "no domain has room", with the reserved suffix when capacity exists but every
// fitting domain's room is reserved by forming gangs, counting and logging the decision.
// rooms are counted outside the other gangs' reservations; reason overrides the logged
// reason when non-empty.
func (p *cycle) noFit(rooms map[string]int, failed map[string]struct{}, reason string) *fwk.Status {
	p.recordPending()
	rooms, reserved, st := p.noFitVerdict(rooms)
	if reserved {
		p.waitForRoom()
		metrics.CountPin(metrics.PinReserved)
		p.logNoFit(rooms, failed, "reserved")
		return st
	}
	metrics.CountPin(metrics.PinNoFit)
	if reason == "" {
		reason = "capacity"
	}
	p.logNoFit(rooms, failed, reason)
	return st
}

// noFitVerdict is noFit's decision without its side effects: the status, whether capacity
// exists but every fitting domain's room is reserved by forming gangs, and the rooms the
// message was judged on (without reservations when nothing fits outside them).
func (p *cycle) noFitVerdict(rooms map[string]int) (map[string]int, bool, *fwk.Status) {
	key := p.info.Key
	if _, fit := topology.BestFit(rooms, p.need); !fit {
		rooms = p.rawRooms(rooms)
	}
	if _, ok := topology.BestFit(rooms, p.need); ok {
		return rooms, true, fwk.NewStatus(fwk.Unschedulable, msg.NoRoomReserved(key))
	}
	if d, classes, ok := p.deviceShort(); ok {
		return rooms, false, fwk.NewStatus(fwk.Unschedulable, msg.NoRoomDevices(key, classes, d, rooms[d], p.need))
	}
	if d, room, ok := topology.Largest(rooms); ok {
		return rooms, false, fwk.NewStatus(fwk.Unschedulable, msg.NoRoomBest(key, d, room, p.need))
	}
	return rooms, false, fwk.NewStatus(fwk.Unschedulable, msg.NoRoomNoLabel(key, p.info.TopologyKey))
}

func (p *cycle) logNoFit(rooms map[string]int, failed map[string]struct{}, reason string) {
	p.logger.V(4).Info("gangpack.pinGang.no_fit", "pod", klog.KObj(p.pod), "gang", p.info.Key, "topologyKey", p.info.TopologyKey,
		"need", p.need, "room", rooms, "failedDomains", sets.List(sets.KeySet(failed)), "reason", reason)
}

// resting returns the wait of a gang whose only fitting domains rest after its reservation
// expired there (nil otherwise); it is woken when the rest ends.
func (p *cycle) resting(rooms map[string]int, failed map[string]struct{}) *fwk.Status {
	d, ok := p.restingDomain(rooms, failed)
	if !ok {
		return nil
	}
	metrics.CountPin(metrics.PinNoFit)
	p.logNoFit(rooms, failed, "resting")
	return fwk.NewStatus(fwk.Unschedulable, msg.NoRoomResting(p.info.Key, d))
}

// restingDomain is the best-fitting domain when only resting domains fit the gang.
func (p *cycle) restingDomain(rooms map[string]int, failed map[string]struct{}) (string, bool) {
	if len(failed) == 0 {
		return "", false
	}
	if _, fits := topology.BestFit(topology.Without(rooms, failed), p.need); fits {
		return "", false
	}
	d, ok := topology.BestFit(rooms, p.need)
	if !ok {
		return "", false
	}
	_, rests := p.pl.read.Resting(p.info.Owner(), p.info.TopologyKey)[d]
	return d, rests
}

// adoptBlocked parks a gang whose placed members' domain has room only inside other forming
// gangs' reservations; it is woken when reserved room is given back.
func (p *cycle) adoptBlocked(d string) *fwk.Status {
	p.waitForRoom()
	metrics.CountPin(metrics.PinReserved)
	p.logger.V(4).Info("gangpack.pinGang.adopt_blocked", "pod", klog.KObj(p.pod), "gang", p.info.Key, "domain", d)
	return fwk.NewStatus(fwk.Unschedulable, msg.AdoptReserved(d, p.info.Key))
}

// shortOnReserved parks a pinned gang whose placed members' domain is short of room for the
// rest as reservation-blocked when the room it lacks is inside other forming gangs'
// reservations: only a hold lift gives that room back, and it wakes the pod (as adoptBlocked
// does for a gang without a pin).
func (p *cycle) shortOnReserved(domain string) {
	if len(p.others) == 0 {
		return
	}
	if p.rawRooms(nil)[domain] >= p.need {
		p.waitForRoom()
	}
}

// waitForRoom records the pod as blocked by a hold, so the next hold lift wakes it. A hold lifted
// between the decision and the record (the store's generation moved) wakes it at once.
func (p *cycle) waitForRoom() {
	p.fx.ParkBlocked(p.logger, p.pod, p.generation)
}

// deviceShort reports, when no domain fits the gang, whether one would by resources alone:
// then its DRA devices are what is short there. It returns that domain (the best fit by
// resources) and the device classes the members request.
func (p *cycle) deviceShort() (string, string, bool) {
	if p.dev == nil {
		return "", "", false
	}
	dev := p.dev
	p.dev = nil
	rooms := topology.Rooms(topology.Plan(&p.gang, p.topologyNodes(p.all, false, nil)))
	p.dev = dev
	d, ok := topology.BestFit(rooms, p.need)
	return d, strings.Join(dev.classes(), ","), ok
}
