package gang

import (
	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// DeviceSlots is the preemption arithmetic's resource for DRA devices: a node's free slots are
// how many members its devices take now, each member takes one, and evicting pods gives back
// what their devices add (Shortfall.SlotGain).
const DeviceSlots = "ome.io/device-slots"

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
	// SlotGain, for a gang whose members take DRA devices, is how many more members node
	// takes once pods are gone (their devices freed): the DeviceSlots they give back. nil
	// for a gang without claims.
	SlotGain func(node string, pods []*v1.Pod) int64
}

// RoomComing is a domain that fits once its Terminating pods are gone: the preemptor waits.
type RoomComing struct {
	Pods   int64
	Domain string
}
