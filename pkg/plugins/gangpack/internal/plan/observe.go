package plan

import (
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// recordQuality sets member_room, largest_placeable_gang and stranded_capacity for the gang's
// topology key from one planning over all nodes.
func (p *cycle) recordQuality(nodes []topology.Node) {
	resource, hasResource := p.primary, p.hasPrimary
	var free map[string]int64
	if hasResource {
		free = freeUnits(nodes, resource)
	}
	p.recordQualityOf(memberRooms(&p.gang, nodes), free, resource, hasResource)
}

// recordQualityOf sets the gauges from each domain's member room and free units.
func (p *cycle) recordQualityOf(rooms map[string]int, free map[string]int64, resource string, hasResource bool) {
	p.pl.quality.Planned(p.info.TopologyKey, p.info.Key, p.need, rooms, free, resource, hasResource, p.pl.members.GangPending)
}

// recordPending records the gang as pending after "no domain has room".
func (p *cycle) recordPending() {
	p.pl.quality.Pending(p.info.TopologyKey, p.info.Key, p.need)
}
