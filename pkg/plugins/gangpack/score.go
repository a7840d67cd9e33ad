package gangpack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// packState holds raw scores by node name (CycleState gangpack.domainpack).
type packState struct {
	raw map[string]int64
}

func (s *packState) Clone() fwk.StateData { return s }

// PreScore decides the scoring mode (placement.md §7): best fit among the surviving domains
// of a deferred plan, nothing for pinned members, and domain packing for standalone pods.
func (pl *GangPack) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if plan := readDeferred(cs); plan != nil {
		return pl.preScoreDeferred(cs, plan, nodes)
	}
	if readPin(cs) != nil {
		return fwk.NewStatus(fwk.Skip)
	}
	if _, _, member := gangOf(pod); member || !pl.args.PackStandalone() || pl.args.TopologyKey == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	key := pl.args.TopologyKey
	fit := newPodFit(pod)
	free := map[string]int64{}
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		d := node.Labels[key]
		if d == "" {
			continue
		}
		nf, freePods := nodeFree(ni)
		free[d] += 0
		if fit.fits(ni, nf, freePods) {
			free[d]++
		}
	}
	if len(free) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	var maxFree int64
	for _, f := range free {
		maxFree = max(maxFree, f)
	}
	raw := make(map[string]int64, len(nodes))
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			if d := node.Labels[key]; d != "" {
				raw[node.Name] = max(0, maxFree-free[d])
			}
		}
	}
	cs.Write(packStateKey, &packState{raw: raw})
	return nil
}

func (pl *GangPack) preScoreDeferred(cs fwk.CycleState, plan *deferredState, nodes []fwk.NodeInfo) *fwk.Status {
	key := plan.Gang.TopologyKey
	surviving := map[string]int{}
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			if dp, ok := plan.Planned[node.Labels[key]]; ok {
				surviving[dp.Domain] = dp.Room
			}
		}
	}
	if len(surviving) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	maxRoom := 0
	for _, r := range surviving {
		maxRoom = max(maxRoom, r)
	}
	raw := make(map[string]int64, len(nodes))
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			if r, ok := surviving[node.Labels[key]]; ok {
				raw[node.Name] = int64(maxRoom - r)
			}
		}
	}
	cs.Write(packStateKey, &packState{raw: raw})
	return nil
}

// Score returns the raw score computed at PreScore.
func (pl *GangPack) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := cs.Read(packStateKey)
	if err != nil {
		return 0, nil
	}
	s, ok := d.(*packState)
	if !ok || ni.Node() == nil {
		return 0, nil
	}
	return s.raw[ni.Node().Name], nil
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
