package plan

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// A placement group sits in one group domain (a value of the group key). Partner keys need
// not be nested in the group key (rack r1 may exist in zones A and B), so a partner's
// commitment records its group domain (Commitment.Within) next to its own domain, and every
// use of the pin (planning a pinned member, its reservation, Filter) keeps to the nodes of
// both. Partners that are pinned or have placed members fix the group domain for the
// partners still to place: a partner whose pin or members span several group domains,
// partners that fix different group domains, and a partner on nodes without the group key
// make the group wait with a reason, rather than place the missing partners in the wrong
// group domain or in any of them.

// partnerAnchor returns the group-key values a partner fixes (sorted), whether it fixes any
// (it is pinned or has placed members), and the status that parks the pod when one of its
// nodes lacks the group key.
func (p *cycle) partnerAnchor(info gang.Info) ([]string, bool, *fwk.Status) {
	gk := p.info.Group.TopologyKey
	if c, pinned := p.pl.read.Commitment(info.Key); pinned {
		if c.Within.Key == gk && c.Within.Value != "" {
			return []string{c.Within.Value}, true, nil
		}
		values := sets.New[string]()
		for _, ni := range p.nodesOfDomain(c.Key, c.Domain) {
			v := ni.Node().Labels[gk]
			if v == "" {
				return nil, true, p.anchorWait("no_label", msg.GroupAnchorNoLabel(p.info.Group.Key, info.Key, gk))
			}
			values.Insert(v)
		}
		if values.Len() > 0 {
			return sets.List(values), true, nil
		}
	}
	placed := p.pl.read.Placed(info, p.all)
	if len(placed) == 0 {
		return nil, false, nil
	}
	values, st := p.placedGroupValues(info, placed)
	return values, true, st
}

// placedGroupValues returns the group-key values of the placed members' nodes (sorted), or
// the status that parks the pod when one of those nodes lacks the group key.
func (p *cycle) placedGroupValues(info gang.Info, placed []gang.Placed) ([]string, *fwk.Status) {
	gk := p.info.Group.TopologyKey
	infos := p.pl.nodes()
	values := sets.New[string]()
	for _, m := range placed {
		ni, err := infos.Get(m.Node)
		if err != nil || ni.Node() == nil || ni.Node().Labels[gk] == "" {
			return nil, p.anchorWait("no_label", msg.GroupAnchorNoLabel(p.info.Group.Key, info.Key, gk))
		}
		values.Insert(ni.Node().Labels[gk])
	}
	return sets.List(values), nil
}

// placedWithin is the group domain a partner with placed members adopts: the one group
// domain its members' nodes are in (zero for a gang of its own), or the status that parks
// the pod when they are in several or on a node without the group key.
func (p *cycle) placedWithin() (placement.DomainRef, *fwk.Status) {
	g := p.info.Group
	if g == nil {
		return placement.DomainRef{}, nil
	}
	values, st := p.placedGroupValues(p.info, p.placed)
	if st != nil {
		return placement.DomainRef{}, st
	}
	if len(values) != 1 {
		return placement.DomainRef{}, p.anchorWait("straddles", msg.GroupStraddles(g.Key, p.info.Key, g.TopologyKey, values))
	}
	return placement.DomainRef{Key: g.TopologyKey, Value: values[0]}, nil
}

// anchorWait parks the pod because its group's domain is not clear.
func (p *cycle) anchorWait(reason, msg string) *fwk.Status {
	p.logger.V(4).Info("gangpack.group.anchor_wait", "pod", klog.KObj(p.pod), "group", p.info.Group.Key,
		"groupKey", p.info.Group.TopologyKey, "reason", reason)
	return fwk.NewStatus(fwk.Unschedulable, msg)
}
