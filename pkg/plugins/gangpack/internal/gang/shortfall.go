package gang

import "github.com/moirai-internal/ome-scheduler/pkg/topology"

// Shortfall is a gang, or a placement group, that no domain has room for even when other
// gangs' reservations are ignored: what preemption needs to find a domain to free.
type Shortfall struct {
	Info Info
	// Gang is the gang's shape and need (for a group: Need is every partner's need).
	Gang topology.Gang
	// Nodes are the gang's nodes translated for the preemption arithmetic (a gang only).
	Nodes []topology.Node
	// Placed counts the gang's placed members: only their domain may be freed.
	Placed int
	// Partners and GroupNodes are a placement group's, for the group planner.
	Partners   []topology.Partner
	GroupNodes []topology.GroupNode
}

// RoomComing is a domain that fits once its Terminating pods are gone: the preemptor waits.
type RoomComing struct {
	Pods   int64
	Domain string
}
