package gangpack

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"

	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// groupRecords remembers which partners' attempts were pinned together, so that unwinding
// one of them unwinds them all (rule 4). A group's record ends when the whole group is
// admitted at Permit or when it is unwound.
type groupRecords struct {
	mu      sync.Mutex
	byGroup map[string]map[string]uint64 // group key → partner gang key → attempt id
	byGang  map[string]string            // partner gang key → group key
}

func newGroupRecords() *groupRecords {
	return &groupRecords{byGroup: map[string]map[string]uint64{}, byGang: map[string]string{}}
}

// record notes that gang's attempt id belongs to the group's current placement.
func (r *groupRecords) record(group, gang string, id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.byGroup[group]
	if m == nil {
		m = map[string]uint64{}
		r.byGroup[group] = m
	}
	m[gang] = id
	r.byGang[gang] = group
}

// take ends the record of the group gang's attempt id belongs to and returns its other
// partners' attempts; ok is false when that attempt is in no record.
func (r *groupRecords) take(gang string, id uint64) (group string, others map[string]uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	group, ok = r.byGang[gang]
	if !ok || r.byGroup[group][gang] != id {
		return "", nil, false
	}
	others = r.byGroup[group]
	r.forgetLocked(group)
	delete(others, gang)
	return group, others, true
}

// forget ends the group's record.
func (r *groupRecords) forget(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(group)
}

func (r *groupRecords) forgetLocked(group string) {
	for g := range r.byGroup[group] {
		if r.byGang[g] == group {
			delete(r.byGang, g)
		}
	}
	delete(r.byGroup, group)
}

// len is the number of recorded groups (tests).
func (r *groupRecords) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byGroup)
}

// cascade unwinds the partners pinned together with gang's released attempt id: one
// partner's timeout, rejection or PodGroup deletion unwinds the whole group (rule 4).
func (gs *gangs) cascade(logger klog.Logger, gang string, id uint64, cause string) {
	group, others, ok := gs.groups.take(gang, id)
	if !ok {
		return
	}
	metrics.GroupTotal.WithLabelValues(metrics.GroupUnwound).Inc()
	logger.V(4).Info("gangpack.group.unwind", "group", group, "gang", gang, "cause", cause, "partners", len(others))
	for other, oid := range others {
		gs.unwindWith(logger, gs.store.Release, other, oid, cause, false)
	}
}

// groupCommitted reports whether every partner of a committed gang's group has minMember
// members placed (rule 4): a pinned partner is committed, an unpinned one (after a restart)
// has minMember bound live members. The gang itself is committed by the caller's check.
func (pl *GangPack) groupCommitted(info gang.Info) bool {
	g := info.Group
	if g == nil {
		return true
	}
	pts, st := pl.partners(info)
	if st != nil || len(pts) < g.Size {
		return false
	}
	for _, pt := range pts {
		if pt.info.Key == info.Key {
			continue
		}
		if !pt.ok {
			return false
		}
		if c, pinned := pl.store.Get(pt.info.Key); pinned {
			if c.Forming() {
				return false
			}
			continue
		}
		if pl.boundLive(pt.info) < pt.info.MinMember {
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
	pts, st := pl.partners(info)
	if st != nil {
		return 0
	}
	n := 0
	for _, pt := range pts {
		if pt.info.Key == info.Key {
			continue
		}
		c, pinned := pl.store.Get(pt.info.Key)
		if !pinned || c.Forming() {
			continue
		}
		pl.forEachWaiter(pt.info.Key, c.ID, func(wp fwk.WaitingPod) {
			pl.doubts.admit(wp.GetPod().UID)
			wp.Allow(Name)
			n++
		})
	}
	pl.groups.forget(g.Key)
	return n
}

// pruneGroups is GC's part for placement groups: a waiting group none of whose pods is
// live any more is forgotten, and so is a group record none of whose attempts still owns
// its partner's pin (every partner was released silently or re-planned).
func (pl *GangPack) pruneGroups() {
	for _, k := range pl.groupsWaiting.keys() {
		ns, name, ok := strings.Cut(k, "/")
		if !ok || pl.args.PlacementGroupLabel == "" {
			pl.groupsWaiting.remove(k)
			continue
		}
		sel := labels.SelectorFromSet(labels.Set{pl.args.PlacementGroupLabel: name})
		pods, err := pl.members.Pods(ns).List(sel)
		if err == nil && !slices.ContainsFunc(pods, gang.Live) && !pl.groupHasPodGroups(ns, sel) {
			pl.groupsWaiting.remove(k)
		}
	}
	pl.groups.prune(func(gang string, id uint64) bool {
		c, ok := pl.store.Get(gang)
		return ok && c.ID == id
	})
}

// groupHasPodGroups reports whether a PodGroup of the namespace carries the group label.
func (pl *GangPack) groupHasPodGroups(ns string, sel labels.Selector) bool {
	r := pl.podGroups
	if r == nil || r.cur.Load() == nil {
		return false
	}
	list, err := r.cur.Load().lister.PodGroups(ns).List(sel)
	return err == nil && len(list) > 0
}

// prune forgets the groups none of whose recorded attempts is still current.
func (r *groupRecords) prune(current func(gang string, id uint64) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for group, m := range r.byGroup {
		alive := false
		for gang, id := range m {
			if current(gang, id) {
				alive = true
				break
			}
		}
		if !alive {
			r.forgetLocked(group)
		}
	}
}
