package plan

import (
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// softAnchor returns the first template (current pod first) with a ScheduleAnyway topology
// spread constraint, and those constraints.
func softAnchor(templates []*v1.Pod) (*v1.Pod, []v1.TopologySpreadConstraint) {
	for _, t := range templates {
		var soft []v1.TopologySpreadConstraint
		for _, c := range t.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable == v1.ScheduleAnyway {
				soft = append(soft, c)
			}
		}
		if len(soft) > 0 {
			return t, soft
		}
	}
	return nil, nil
}

// softSpreadRank returns the best-fit tie-breaker of gang soft spread over rooms: a domain
// ranks by how many pods matching the anchor's ScheduleAnyway constraints already sit in its
// spread domains (fewer = lower skew after placing the gang there). nil when off, when no
// template has such a constraint, or when no other domain ties with the best fit: counting
// the matching pods reads every pod of every node, so it is done only when a tie needs it.
//
// Packing wins over the preference: the rank only orders domains whose room equals the best
// fit's room. A domain with more room is never chosen for a better spread.
func (p *cycle) softSpreadRank(rooms map[string]int) func(string) int {
	if !p.pl.args.SoftSpread() || !bestFitTies(rooms, p.need) {
		return nil
	}
	anchor, soft := softAnchor(p.templates)
	if anchor == nil {
		return nil
	}
	type constraint struct {
		key    string
		sel    labels.Selector
		counts map[string]int
	}
	var cs []*constraint
	for i := range soft {
		sel, err := metav1.LabelSelectorAsSelector(soft[i].LabelSelector)
		if err != nil {
			continue
		}
		cs = append(cs, &constraint{key: soft[i].TopologyKey, sel: sel, counts: map[string]int{}})
	}
	if len(cs) == 0 {
		return nil
	}
	// spread values of each gang domain, per constraint
	domainValues := make([]map[string]map[string]struct{}, len(cs))
	for i := range cs {
		domainValues[i] = map[string]map[string]struct{}{}
	}
	for _, ni := range p.all {
		node := ni.Node()
		if node == nil {
			continue
		}
		d := node.Labels[p.info.TopologyKey]
		for i, c := range cs {
			v, ok := node.Labels[c.key]
			if !ok {
				continue
			}
			if d != "" {
				if domainValues[i][d] == nil {
					domainValues[i][d] = map[string]struct{}{}
				}
				domainValues[i][d][v] = struct{}{}
			}
			for _, pi := range ni.GetPods() {
				q := pi.GetPod()
				if q.Namespace == anchor.Namespace && c.sel.Matches(labels.Set(q.Labels)) {
					c.counts[v]++
				}
			}
		}
	}
	return func(domain string) int {
		total := 0
		for i, c := range cs {
			best := math.MaxInt32
			for v := range domainValues[i][domain] {
				best = min(best, c.counts[v])
			}
			if best == math.MaxInt32 {
				best = 0
			}
			total += best
		}
		return total
	}
}

// bestFitTies reports whether another domain has the best fit's room.
func bestFitTies(rooms map[string]int, need int) bool {
	best, ok := topology.BestFit(rooms, need)
	if !ok {
		return false
	}
	for d, r := range rooms {
		if r == rooms[best] && d != best {
			return true
		}
	}
	return false
}
