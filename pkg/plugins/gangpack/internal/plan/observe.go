package plan

import (
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/quality"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// recordQuality sets member_room, largest_placeable_gang and stranded_capacity for the gang's
// topology key from one planning over all nodes.
func (p *planner) recordQuality(nodes []topology.Node) {
	resource, hasResource := quality.PrimaryResource(p.gang.Shapes)
	var free map[string]int64
	if hasResource {
		free = quality.FreeUnits(nodes, resource)
	}
	p.recordQualityOf(quality.MemberRooms(&p.gang, nodes), free, resource, hasResource)
}

// recordQualityOf sets the gauges from each domain's member room and free units.
func (p *planner) recordQualityOf(rooms map[string]int, free map[string]int64, resource string, hasResource bool) {
	key := p.info.TopologyKey
	_, largest, _ := topology.Largest(rooms)
	var stranded int64
	if hasResource {
		threshold := p.pl.quality.SmallestNeed(key, p.info.Key, p.need, p.pl.members.GangPending)
		stranded = quality.StrandedUnits(rooms, free, threshold)
	}
	p.pl.quality.Record(key, rooms, largest, resource, hasResource, stranded)
}

// recordPending records the gang as pending after "no domain has room".
func (p *planner) recordPending() {
	p.pl.quality.Pending(p.info.TopologyKey, p.info.Key, p.need)
}
