package plan

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Domain preferences (docs/design.md §4.1): among the domains that fit the whole gang, the
// one its members prefer wins before best fit. A domain's preference is what kube-scheduler's
// NodeAffinity score would give the members placed there (Score in
// k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity, v1.35.4 node_affinity.go:272-297:
// the sum of the weights of the pod's preferred terms the node matches), summed over the
// members planned into the domain (topology.Preference). Off with domainPreferences: None.

// preferTerms returns, per shape class, the preferred node-affinity terms of its
// representative (nil entries for none); nil when preferences are off or no shape has any,
// so a gang without preferences costs nothing here. A term that does not parse counts for
// nothing, as in kube-scheduler (whose PreScore then fails the pod).
func (p *cycle) preferTerms() []*nodeaffinity.PreferredSchedulingTerms {
	if !p.termsRead {
		p.terms, p.termsRead = p.readTerms(), true
	}
	return p.terms
}

func (p *cycle) readTerms() []*nodeaffinity.PreferredSchedulingTerms {
	if !p.pl.args.PrefersNodeAffinity() {
		return nil
	}
	var out []*nodeaffinity.PreferredSchedulingTerms
	for i, c := range p.classes {
		a := c.rep.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			continue
		}
		t, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			continue
		}
		if out == nil {
			out = make([]*nodeaffinity.PreferredSchedulingTerms, len(p.classes))
		}
		out[i] = t
	}
	return out
}

// preferences returns the preference of each domain of rooms that fits the gang (room at
// least need), planned over the nodes of the last planning; nil when no member has a
// preferred node-affinity term, preferences are off, or every fitting domain has the same
// preference.
func (p *cycle) preferences(rooms map[string]int) map[string]int64 {
	terms := p.preferTerms()
	if terms == nil {
		return nil
	}
	objs := p.nodeObjects()
	out := make(map[string]int64, len(rooms))
	for d, r := range rooms {
		if r < p.need {
			continue
		}
		nodes := p.nodesIn(d)
		out[d] = topology.Preference(&p.gang, nodes, func(i, s int) int64 { return objs.score(terms, nodes[i].Name, s) })
	}
	return distinct(out)
}

// distinct returns prefs, or nil when every domain has the same preference: then preferences
// decide nothing, and planning is exactly what it is without them.
func distinct(prefs map[string]int64) map[string]int64 {
	first, set := int64(0), false
	for _, v := range prefs {
		if set && v != first {
			return prefs
		}
		first, set = v, true
	}
	return nil
}

// preferOf returns prefs as a Prefer function (nil for nil prefs: no preferences).
func preferOf(prefs map[string]int64) func(string) int64 {
	if prefs == nil {
		return nil
	}
	return func(d string) int64 { return prefs[d] }
}

// topPreferred returns the rooms of the fitting domains with the highest preference (all of
// rooms when prefs is nil): the domains best fit and its tie-breaker choose among.
func topPreferred(rooms map[string]int, need int, prefs map[string]int64) map[string]int {
	if prefs == nil {
		return rooms
	}
	var top int64
	found := false
	for d, r := range rooms {
		if r >= need && (!found || prefs[d] > top) {
			top, found = prefs[d], true
		}
	}
	out := map[string]int{}
	for d, r := range rooms {
		if r >= need && prefs[d] == top {
			out[d] = r
		}
	}
	return out
}

// groupPreferences returns the preference of each feasible group domain of a placement group:
// the sum over the partners of each one's preference in the sub-domain the plan chose for it
// (each partner by its own terms, on the group nodes of that sub-domain); nil when no partner
// has preferences or every feasible group domain has the same.
func (p *cycle) groupPreferences(gp *groupPlanning, plans map[string]*topology.GroupPlan) map[string]int64 {
	terms := make([][]*nodeaffinity.PreferredSchedulingTerms, len(gp.todo))
	some := false
	for i, q := range gp.todo {
		terms[i] = q.preferTerms()
		some = some || terms[i] != nil
	}
	if !some {
		return nil
	}
	objs := p.nodeObjects()
	out := map[string]int64{}
	for d, gpl := range plans {
		if gpl == nil || !gpl.Feasible {
			continue
		}
		for i, q := range gp.todo {
			if terms[i] == nil {
				continue
			}
			var nodes []topology.Node
			for _, n := range gp.nodes {
				if n.Group == d && n.Sub[i] == gpl.Sub[i] {
					nodes = append(nodes, topology.Node{Name: n.Name, Free: n.Free, FreePods: n.FreePods, Fits: n.Fits[i]})
				}
			}
			out[d] += topology.Preference(&q.gang, nodes, func(k, s int) int64 { return objs.score(terms[i], nodes[k].Name, s) })
		}
	}
	return distinct(out)
}

// nodeScores returns what a member scores on each of nodes by its preferred node affinity
// (the best of the gang's shapes there), nil when the members have no preferences.
func (p *cycle) nodeScores(nodes []topology.Node) func(i int) int64 {
	terms := p.preferTerms()
	if terms == nil {
		return nil
	}
	objs := p.nodeObjects()
	scores := make([]int64, len(nodes))
	for i := range nodes {
		for s := range terms {
			scores[i] = max(scores[i], objs.score(terms, nodes[i].Name, s))
		}
	}
	return func(i int) int64 { return scores[i] }
}

// nodeObjects looks nodes up by name in the planning's snapshot, each once per use.
type nodeObjects struct {
	lister fwk.NodeInfoLister
	seen   map[string]*v1.Node // nil: not in the snapshot
}

func (p *cycle) nodeObjects() *nodeObjects {
	return &nodeObjects{lister: p.pl.nodes(), seen: map[string]*v1.Node{}}
}

func (o *nodeObjects) get(name string) *v1.Node {
	n, ok := o.seen[name]
	if !ok {
		if ni, err := o.lister.Get(name); err == nil {
			n = ni.Node()
		}
		o.seen[name] = n
	}
	return n
}

// score is what a member of shape s scores on node name by its preferred node-affinity terms
// (0 for a shape without terms or a node not in the snapshot).
func (o *nodeObjects) score(terms []*nodeaffinity.PreferredSchedulingTerms, name string, s int) int64 {
	if s >= len(terms) || terms[s] == nil {
		return 0
	}
	if n := o.get(name); n != nil {
		return terms[s].Score(n)
	}
	return 0
}
