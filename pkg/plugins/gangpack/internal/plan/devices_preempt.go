package plan

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// DRA devices in the preemption arithmetic: each member of a shape with claims takes one
// gang.DeviceSlots; a node has as many as its devices take members now (other gangs'
// reservations ignored, as preemption does); evicting pods gives back what their devices add
// there (Shortfall.SlotGain: device room with their claims' devices freed, less device room
// now). The slots count one claim shape: a gang's first shape with claims, or the one shape
// every partner of a placement group shares.

// slotRoom counts the device slots of one claim shape.
type slotRoom struct {
	p     *cycle // the planning whose device view and context are used
	sc    *shapeClaims
	in    *devices.Inputs
	limit int // the most members one node is asked for
}

// on is how many members of the shape node's devices take in view in.
func (s slotRoom) on(in *devices.Inputs, node *v1.Node) int64 {
	room, err := devices.Room(s.p.dev.ctx, in, node, s.sc.member, s.sc.shared, s.limit)
	if err != nil {
		return 0
	}
	return int64(room)
}

// free is the slots node name has now.
func (s slotRoom) free(name string) int64 {
	ni, err := s.p.pl.nodes().Get(name)
	if err != nil || ni.Node() == nil {
		return 0
	}
	return s.on(s.in, ni.Node())
}

// gain is the slots evicting pods from node name gives back (Shortfall.SlotGain).
func (s slotRoom) gain(name string, pods []*v1.Pod) int64 {
	ni, err := s.p.pl.nodes().Get(name)
	if err != nil || ni.Node() == nil {
		return 0
	}
	var held []structured.DeviceID
	for _, q := range pods {
		held = append(held, devices.HeldBy(s.p.pl.devices.Used(q))...)
	}
	if len(held) == 0 {
		return 0
	}
	return max(s.on(s.in.Without(held), ni.Node())-s.on(s.in, ni.Node()), 0)
}

// withSlots is g whose shapes with claims each take one device slot per member.
func withSlots(g topology.Gang, claims []*shapeClaims) topology.Gang {
	g.Shapes = slices.Clone(g.Shapes)
	for s, sc := range claims {
		if sc != nil && s < len(g.Shapes) {
			g.Shapes[s] = maps.Clone(g.Shapes[s])
			g.Shapes[s][gang.DeviceSlots] = 1
		}
	}
	return g
}

// deviceSlots puts a gang's DRA devices into its shortfall (nothing for a gang without
// claims), counted for its first shape with claims.
func (p *cycle) deviceSlots(sf *gang.Shortfall) {
	if p.dev == nil {
		return
	}
	in := p.inputs()
	if in == nil {
		return // devErr: the gang waits with it
	}
	var sc *shapeClaims
	for _, c := range p.dev.claims {
		if c != nil {
			sc = c
			break
		}
	}
	s := slotRoom{p: p, sc: sc, in: in, limit: p.perNode()}
	sf.Gang = withSlots(sf.Gang, p.dev.claims)
	for i := range sf.Nodes {
		n := &sf.Nodes[i]
		if n.Free == nil {
			n.Free = topology.Resources{}
		}
		n.Free[gang.DeviceSlots] = s.free(n.Name)
	}
	sf.SlotGain = s.gain
}

// groupSlots is the device slots of a placement group's partners (todo): ok false when they
// cannot be counted as one kind of slot (two partners' claims differ, or a partner's devices
// cannot be read): the group then waits instead of preempting. A nil slotRoom: no partner
// has claims.
func groupSlots(todo []*cycle) (*slotRoom, bool) {
	var s *slotRoom
	var sig string
	for _, q := range todo {
		if q.devErr != nil {
			return nil, false
		}
		if q.dev == nil {
			continue
		}
		for _, sc := range q.dev.claims {
			if sc == nil {
				continue
			}
			if sg := devices.Signature(sc.member, sc.shared, 0); s == nil {
				in := q.inputs()
				if in == nil {
					return nil, false
				}
				s, sig = &slotRoom{p: q, sc: sc, in: in}, sg
			} else if sg != sig {
				return nil, false
			}
		}
		s.limit += q.perNode()
	}
	return s, true
}
