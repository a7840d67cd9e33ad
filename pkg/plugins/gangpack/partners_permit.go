package gangpack

import (
	"slices"
	"strings"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"

	"k8s.io/apimachinery/pkg/labels"
)

// groupCommitted reports whether every partner of a committed gang's group has minMember
// members placed (docs/design.md §19, item 4): a pinned partner is committed, an unpinned one (after a restart)
// has minMember bound live members. The gang itself is committed by the caller's check.
func (pl *GangPack) groupCommitted(info gang.Info) bool {
	g := info.Group
	if g == nil {
		return true
	}
	pts, st := pl.planner.Partners(info)
	if st != nil || len(pts) < g.Size {
		return false
	}
	for _, pt := range pts {
		if pt.Info.Key == info.Key {
			continue
		}
		if !pt.OK {
			return false
		}
		if c, pinned := pl.ledger.Commitment(pt.Info.Key); pinned {
			if c.Forming() {
				return false
			}
			continue
		}
		if pl.boundLive(pt.Info) < pt.Info.MinMember {
			return false
		}
	}
	return true
}

// boundLive counts a gang's live members with a node.
func (pl *GangPack) boundLive(info gang.Info) int {
	pods, err := pl.members.List(info.Namespace, info.Name)
	if err != nil {
		return 0
	}
	n := 0
	for _, q := range pods {
		if gang.Live(q) && q.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// admitPartners lets the waiting members of every other partner of the group bind, each
// under its partner's current attempt, and ends the group's record.
func (pl *GangPack) admitPartners(info gang.Info) int {
	g := info.Group
	pts, st := pl.planner.Partners(info)
	if st != nil {
		return 0
	}
	n := 0
	for _, pt := range pts {
		if pt.Info.Key == info.Key {
			continue
		}
		c, pinned := pl.ledger.Commitment(pt.Info.Key)
		if !pinned || c.Forming() {
			continue
		}
		n += pl.ledger.AdmitWaiters(pt.Info.Key, c.ID)
	}
	pl.ledger.GroupAdmitted(g.Key)
	return n
}

// pruneGroups is GC's part for placement groups: the ledger forgets a waiting group none of
// whose pods is live any more and no PodGroup names, and the records of groups no attempt
// owns any more.
func (pl *GangPack) pruneGroups() {
	pl.ledger.PruneGroups(func(group string) bool {
		ns, name, ok := strings.Cut(group, "/")
		if !ok || pl.args.PlacementGroupLabel == "" {
			return false
		}
		sel := labels.SelectorFromSet(labels.Set{pl.args.PlacementGroupLabel: name})
		pods, err := pl.members.Pods(ns).List(sel)
		if err != nil || slices.ContainsFunc(pods, gang.Live) {
			return true
		}
		pgs, err := pl.podGroups.List(ns, sel)
		return err == nil && len(pgs) > 0
	})
}
