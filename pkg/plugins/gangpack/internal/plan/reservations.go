package plan

import (
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Room reservations. A forming gang reserves the member room of its plan (which nodes, how
// many members each, each member's size) in the store; everyone else counts room outside
// every reservation but their own:
//
//   - planning sets the other gangs' reservations aside before it counts a node's room
//     (topologyNodes), so two gangs may form in one domain when both fit;
//   - Filter refuses a node to a pod only when the pod does not fit the room left there
//     outside the other gangs' reservations;
//   - a pin records its reservation (reservation) and the store checks it against the
//     snapshot's free room (capacity): no two gangs ever count the same slot.

// reservation is the room the gang reserves in a domain of its last planning: up to need
// members spread over the domain's nodes by the planner's matching, packed in node order, or
// on the nodes the members prefer first when they have preferences (prefer.go): the
// plugin's score then agrees with NodeAffinity's on where the members go.
func (p *cycle) reservation(domain string) placement.Reservation {
	nodes := p.nodesIn(domain)
	counts, _ := topology.Assign(&p.gang, nodes, p.need)
	if score := p.nodeScores(nodes); score != nil {
		counts = topology.PreferSlots(&p.gang, nodes, counts, score)
	}
	return SlotsOf(&p.gang, nodes, counts)
}

// SlotsOf turns a member count per node into a reservation: each node's slot is the size of
// the largest of the gang's shapes that fit it (NodeRoom's copy size).
func SlotsOf(g *topology.Gang, nodes []topology.Node, counts map[string]int) placement.Reservation {
	out := make(placement.Reservation, len(counts))
	for i := range nodes {
		if k := counts[nodes[i].Name]; k > 0 {
			each, _ := topology.PerCopy(g, &nodes[i])
			out[nodes[i].Name] = placement.Slot{Count: k, Each: each}
		}
	}
	return out
}

// capacity reports the snapshot's free room of a node, reservations not set aside. It looks
// nodes up by name in the cycle's snapshot: a reservation names a few nodes, and building an
// index of every node here cost a tenth of an unpinned PreFilter at 5,000 nodes.
func (p *cycle) capacity() placement.Capacity { return p.pl.SnapshotCapacity() }

// SnapshotCapacity is the free room of a node of the framework's snapshot.
func (pl *Planner) SnapshotCapacity() placement.Capacity {
	lister := pl.nodes()
	return func(name string) (topology.Resources, int64, bool) {
		ni, err := lister.Get(name)
		if err != nil || ni.Node() == nil {
			return nil, 0, false
		}
		free, pods := gang.NodeFreeAll(ni)
		return free, pods, true
	}
}

// rawRooms plans every node again without setting reservations aside: the room the gang
// would have if no other gang formed. Only the "no room" explanation needs it.
func (p *cycle) rawRooms(rooms map[string]int) map[string]int {
	if len(p.others) == 0 {
		return rooms
	}
	return topology.Rooms(topology.Plan(&p.gang, p.topologyNodes(p.all, true, nil)))
}

// reReserve brings a pinned gang's reservation up to date with its plan of the domain: a
// member that went to another node than its slot, room freed for an adopted gang. A gang
// resumed from a previous leader's nominations keeps a slot on each pending member's
// nominated node (resume.go).
func (p *cycle) reReserve(c *placement.Commitment) {
	if !c.Forming() || p.pl.awaitingVictims(c.Gang, c.Domain) {
		return // a preemptor keeps the room its victims give back
	}
	res := p.reservation(c.Domain)
	if c.Resumed { // a resumed gang keeps the slots on its members' nominated nodes
		if r, ok := p.nominatedReservation(c.Domain, p.nominatedIn(c.Domain), nil); ok {
			res = r
		}
	}
	if res.Members() == c.Reserved.Members() && sameNodes(res, c.Reserved) {
		return
	}
	if !p.fx.Reserve(p.logger, c.Gang, c.ID, res, p.capacity()) {
		return
	}
	c.Reserved = res
	p.logger.V(5).Info("gangpack.pinGang.reserve", "pod", klog.KObj(p.pod), "gang", c.Gang, "domain", c.Domain, "members", res.Members(), "nodes", len(res))
}

func sameNodes(a, b placement.Reservation) bool {
	if len(a) != len(b) {
		return false
	}
	for n, s := range a {
		if b[n].Count != s.Count {
			return false
		}
	}
	return true
}
