package gangpack

import (
	"cmp"
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// packStateKey holds the raw scores by domain, written by PreScore, read by Score.
const packStateKey fwk.StateKey = "gangpack.domainpack"

// packState holds raw scores by domain: Score reads a
// node's domain label and looks its domain up, so PreScore touches each feasible node once
// and allocates per domain, not per node.
type packState struct {
	key string
	raw map[string]int64
}

func (s *packState) Clone() fwk.StateData { return s }

// PreScore decides the scoring mode : best fit among the surviving domains
// of a deferred plan, nothing for pinned members, and domain packing for standalone pods.
func (pl *GangPack) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if deferred := plan.ReadDeferred(cs); deferred != nil {
		return pl.preScoreDeferred(cs, deferred, nodes)
	}
	if pin := plan.ReadPin(cs); pin != nil {
		return pl.preScorePinned(cs, pin)
	}
	if _, _, member := gang.Of(pod); member || !pl.args.PackStandalone() || pl.args.TopologyKey == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	// Every node PreScore sees has passed Filter, so the pod fits each of them: a domain's
	// free count is the number of its feasible nodes.
	key := pl.args.TopologyKey
	free := map[string]int64{}
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			if d := node.Labels[key]; d != "" {
				free[d]++
			}
		}
	}
	if len(free) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	var maxFree int64
	for _, f := range free {
		maxFree = max(maxFree, f)
	}
	for d, f := range free {
		free[d] = maxFree - f
	}
	cs.Write(packStateKey, &packState{key: key, raw: free})
	return nil
}

// reservedStateKey holds, for a pinned member, its gang's reserved slots per node, written
// by PreScore, read by Score.
const reservedStateKey fwk.StateKey = "gangpack.reserved-nodes"

type reservedState struct{ slots map[string]int64 }

func (s *reservedState) Clone() fwk.StateData { return s }

// preScorePinned steers a pinned member to the nodes its gang reserved: a member that lands
// elsewhere in the domain gives a reserved slot back and takes unreserved room, which other
// gangs may have been counting on.
func (pl *GangPack) preScorePinned(cs fwk.CycleState, pin *plan.Pin) *fwk.Status {
	c, ok := pl.ledger.Commitment(pin.Gang.Key)
	if !ok || c.ID != pin.ID || len(c.Reserved) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	slots := make(map[string]int64, len(c.Reserved))
	for n, sl := range c.Reserved {
		slots[n] = int64(sl.Count)
	}
	cs.Write(reservedStateKey, &reservedState{slots: slots})
	return nil
}

func (pl *GangPack) preScoreDeferred(cs fwk.CycleState, d *plan.Deferred, nodes []fwk.NodeInfo) *fwk.Status {
	key := d.Gang.TopologyKey
	surviving := map[string]int{}
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			if dp, ok := d.Planned[node.Labels[key]]; ok {
				surviving[dp.Domain] = dp.Room
			}
		}
	}
	if len(surviving) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	raw := deferredScores(surviving, d.Preference)
	cs.Write(packStateKey, &packState{key: key, raw: raw})
	return nil
}

// deferredScores scores the domains of a deferred plan: the tighter, the higher. With
// preferences (docs/design.md §4.1) a more preferred domain scores above every less preferred
// one, and best fit orders the domains of equal preference.
func deferredScores(rooms map[string]int, prefs map[string]int64) map[string]int64 {
	maxRoom := 0
	for _, r := range rooms {
		maxRoom = max(maxRoom, r)
	}
	raw := make(map[string]int64, len(rooms))
	if prefs == nil {
		for d, r := range rooms {
			raw[d] = int64(maxRoom - r)
		}
		return raw
	}
	type level struct {
		pref int64
		room int
	}
	seen := map[level]struct{}{}
	var levels []level
	for d, r := range rooms {
		l := level{prefs[d], r}
		if _, ok := seen[l]; !ok {
			seen[l] = struct{}{}
			levels = append(levels, l)
		}
	}
	// Best first: higher preference, then less room.
	slices.SortFunc(levels, func(a, b level) int {
		if a.pref != b.pref {
			return cmp.Compare(b.pref, a.pref)
		}
		return cmp.Compare(a.room, b.room)
	})
	for d, r := range rooms {
		raw[d] = int64(len(levels) - 1 - slices.Index(levels, level{prefs[d], r}))
	}
	return raw
}

// Score returns the raw score computed at PreScore.
func (pl *GangPack) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if r, ok := gang.ReadState[*reservedState](cs, reservedStateKey); ok && ni.Node() != nil {
		return r.slots[ni.Node().Name], nil
	}
	s, ok := gang.ReadState[*packState](cs, packStateKey)
	if !ok || ni.Node() == nil {
		return 0, nil
	}
	domain, ok := ni.Node().Labels[s.key]
	if !ok {
		return 0, nil
	}
	return s.raw[domain], nil
}

// ScoreExtensions returns the plugin itself: it normalises its scores.
func (pl *GangPack) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore scales raw scores to 0..MaxNodeScore by the largest raw score.
func (pl *GangPack) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	var maxRaw int64
	for _, s := range scores {
		maxRaw = max(maxRaw, s.Score)
	}
	for i := range scores {
		if maxRaw == 0 {
			scores[i].Score = 0
		} else {
			scores[i].Score = scores[i].Score * fwk.MaxNodeScore / maxRaw
		}
	}
	return nil
}
