package topology

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// Preemption arithmetic. A preemptor (a gang, or a standalone pod as a gang with Need 1)
// wants room for the whole gang in ONE domain. Each domain is judged on its own: its nodes
// and the victim units that hold resources there. A victim unit is evicted whole: a gang
// with all its placed members (some possibly in other domains, where freeing them does not
// help this domain but still costs evicted pods) or a standalone pod.
//
// Room is the placement arithmetic (Plan, NodeRoom) over the domain's nodes with the freed
// resources and pod slots added. Node.Fits means something narrower here than in
// placement: it must report only the constraints that evicting pods does not change
// (affinity, taints, volumes and so on). The resource part of the fit, every request of a
// shape within Free and at least one free pod slot, is recomputed from the node's Free and
// FreePods plus what the evicted units give back.

// NodeFree is what evicting a victim unit gives back on one node.
type NodeFree struct {
	// Resources are the requests of the unit's pods on the node.
	Resources Resources
	// Pods is the number of the unit's pods on the node (the pod slots freed).
	Pods int64
}

// VictimUnit is what preemption evicts as a whole: a placed gang or a standalone pod.
type VictimUnit struct {
	// Name identifies the unit (gang key or pod namespace/name); it breaks ties.
	Name string
	// Priority is the unit's priority. Only units strictly below the preemptor's priority
	// may be evicted.
	Priority int32
	// Pods is how many pods evicting the unit deletes, in every domain (>= 1).
	Pods int
	// PDBViolations is how many of those pods a PodDisruptionBudget does not allow to be
	// disrupted (0 = evicting the unit violates no budget).
	PDBViolations int
	// Frees is, per node name, what evicting the unit gives back on that node. Nodes outside
	// the domain being judged are ignored there.
	Frees map[string]NodeFree
}

// PreemptionCandidate is one domain where the preemptor fits once Victims are evicted,
// with the figures the choice among domains compares.
type PreemptionCandidate struct {
	Domain string
	// Victims are indices into the units passed in, ascending.
	Victims []int
	// Room is the domain's member room (DomainPlan.Room) once the victims are gone; at least
	// Need.
	Room int
	// Need is the preemptor's Need (Room - Need is what is left after it lands).
	Need int
	// PDBViolations is the victims' PDBViolations summed.
	PDBViolations int
	// MaxPriority is the highest victim priority (math.MinInt32 when there is no victim).
	MaxPriority int32
	// Pods is the victims' Pods summed.
	Pods int
	// PrioritySum is the sum over victim pods of their priority (Priority × Pods per unit).
	PrioritySum int64
}

// MinimalVictims finds, within one domain, a set of victim units whose eviction makes room for
// the whole gang. nodes are the domain's nodes (their Domain field is not read; names are
// unique), units the victim units (those with no Frees entry on these nodes never become
// victims). A unit is eligible when its Priority is strictly below priority; others are
// never evicted.
//
// Every eligible unit is evicted first; when the gang still has no room (the domain's Room
// from the placement arithmetic is 0 or below Need), ok is false. Otherwise units are
// reprieved one at a time in reprieve order: more PDBViolations first (units a budget protects are
// spared first, as kube-scheduler's default preemption does, and PDB violations are also
// what the choice among domains weighs first), then higher Priority, then more Pods, then
// Name, then index. A unit is reprieved when the room still suffices without evicting it. The
// pass repeats over the remaining victims until none can be reprieved, so the result is
// 1-minimal: dropping any single victim from it leaves no room. (Room is not monotone in
// the freed resources: a node that gains room for a larger shape may take fewer copies of
// the per-resource largest shape NodeRoom counts, so one pass is not always enough.)
//
// victims are indices into units, ascending (empty when the gang already fits); room is the
// domain's Room once they are evicted.
func MinimalVictims(g *Gang, priority int32, nodes []Node, units []VictimUnit) (victims []int, room int, ok bool) {
	d := newPreemptDomain(g, nodes)
	return d.minimal(priority, units)
}

// PreemptionCandidates runs MinimalVictims for every domain of nodes (nodes with an empty
// Domain are ignored, as in Plan) and returns the domains where the gang fits, best first
// (ComparePreemptionCandidates). Victims index units.
func PreemptionCandidates(g *Gang, priority int32, nodes []Node, units []VictimUnit) []PreemptionCandidate {
	byDomain := map[string][]Node{}
	for i := range nodes {
		if d := nodes[i].Domain; d != "" {
			byDomain[d] = append(byDomain[d], nodes[i])
		}
	}
	var out []PreemptionCandidate
	for dom, ns := range byDomain {
		victims, room, ok := MinimalVictims(g, priority, ns, units)
		if ok {
			out = append(out, NewPreemptionCandidate(dom, g, units, victims, room))
		}
	}
	slices.SortFunc(out, func(a, b PreemptionCandidate) int { return ComparePreemptionCandidates(&a, &b) })
	return out
}

// NewPreemptionCandidate fills a candidate's figures from its victims (indices into units).
func NewPreemptionCandidate(domain string, g *Gang, units []VictimUnit, victims []int, room int) PreemptionCandidate {
	c := PreemptionCandidate{Domain: domain, Victims: victims, Room: room, Need: g.Need, MaxPriority: math.MinInt32}
	for _, i := range victims {
		u := &units[i]
		c.PDBViolations += u.PDBViolations
		c.MaxPriority = max(c.MaxPriority, u.Priority)
		c.Pods += u.Pods
		c.PrioritySum += int64(u.Priority) * int64(u.Pods)
	}
	return c
}

// ComparePreemptionCandidates orders candidates best first: fewer PDB violations, then a
// lower highest victim priority, then fewer victim units, then fewer victim pods, then a
// smaller sum of victim pod priorities (with the pod count already equal, as good as the
// scheduler's offset sum), then the best fit (least Room - Need left once the preemptor
// lands), then the byte-wise smaller domain. It returns -1, 0 or +1; 0 only for candidates
// equal in all of these, so it is strict among candidates of distinct domains (as in one
// PreemptionCandidates answer).
func ComparePreemptionCandidates(a, b *PreemptionCandidate) int {
	if c := cmp.Compare(a.PDBViolations, b.PDBViolations); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MaxPriority, b.MaxPriority); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.Victims), len(b.Victims)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Pods, b.Pods); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PrioritySum, b.PrioritySum); c != 0 {
		return c
	}
	if c := cmp.Compare(int64(a.Room)-int64(a.Need), int64(b.Room)-int64(b.Need)); c != 0 {
		return c
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// ChoosePreemptionCandidate returns the index of the best candidate
// (ComparePreemptionCandidates; among equal ones the first); ok is false for none.
func ChoosePreemptionCandidate(cands []PreemptionCandidate) (int, bool) {
	best := -1
	for i := range cands {
		if best < 0 || ComparePreemptionCandidates(&cands[i], &cands[best]) < 0 {
			best = i
		}
	}
	return best, best >= 0
}

// preemptDomain is one domain's nodes under a changing set of evicted units: work holds the
// nodes with the freed resources added (own Free maps) and recomputed fits.
type preemptDomain struct {
	g     *Gang
	base  []Node
	work  []Node
	ptrs  []*Node
	index map[string]int
}

func newPreemptDomain(g *Gang, nodes []Node) *preemptDomain {
	d := &preemptDomain{
		g:     g,
		base:  nodes,
		work:  make([]Node, len(nodes)),
		ptrs:  make([]*Node, len(nodes)),
		index: make(map[string]int, len(nodes)),
	}
	for i := range nodes {
		n := &nodes[i]
		free := make(Resources, len(n.Free))
		for r, q := range n.Free {
			free[r] = q
		}
		d.work[i] = Node{Name: n.Name, Domain: n.Domain, Free: free, FreePods: n.FreePods, Fits: make([]bool, len(g.Shapes))}
		d.ptrs[i] = &d.work[i]
		if _, dup := d.index[n.Name]; !dup {
			d.index[n.Name] = i
		}
	}
	return d
}

// nodeDelta is what one unit frees on one node of the domain (index into work).
type nodeDelta struct {
	node int
	free NodeFree
}

// deltas lists what the unit frees on the domain's nodes; nil when it holds nothing here.
func (d *preemptDomain) deltas(u *VictimUnit) []nodeDelta {
	var out []nodeDelta
	for name, f := range u.Frees {
		if i, ok := d.index[name]; ok {
			out = append(out, nodeDelta{node: i, free: f})
		}
	}
	return out
}

// apply adds (sign +1, evict) or removes (sign -1, reprieve) a unit's freed resources.
func (d *preemptDomain) apply(ds []nodeDelta, sign int64) {
	for _, x := range ds {
		n := &d.work[x.node]
		for r, q := range x.free.Resources {
			n.Free[r] += sign * q
		}
		n.FreePods += sign * x.free.Pods
	}
}

// room is the domain's Room under the current frees, the resource fit recomputed.
func (d *preemptDomain) room() int {
	for i := range d.work {
		n, b := &d.work[i], &d.base[i]
		for s, req := range d.g.Shapes {
			n.Fits[s] = s < len(b.Fits) && b.Fits[s] && n.FreePods >= 1 && Within(req, n.Free)
		}
	}
	return planDomain(d.g, "", d.ptrs).Room
}

// enough reports whether a room lets the whole gang form.
func (d *preemptDomain) enough(room int) bool {
	return room > 0 && room >= d.g.Need
}

// Within reports whether every positive request is at most the free amount.
func Within(req, free Resources) bool {
	for r, q := range req {
		if q > 0 && q > free[r] {
			return false
		}
	}
	return true
}

func (d *preemptDomain) minimal(priority int32, units []VictimUnit) ([]int, int, bool) {
	frees := make(map[int][]nodeDelta)
	var cands []int
	for i := range units {
		if units[i].Priority >= priority {
			continue
		}
		if ds := d.deltas(&units[i]); len(ds) > 0 {
			frees[i] = ds
			cands = append(cands, i)
		}
	}
	sort.SliceStable(cands, func(x, y int) bool { return reprieveFirst(units, cands[x], cands[y]) })
	for _, u := range cands {
		d.apply(frees[u], +1)
	}
	room := d.room()
	if !d.enough(room) {
		return nil, 0, false
	}
	victims := reprieve(cands, func(u int) bool {
		d.apply(frees[u], -1)
		if r := d.room(); d.enough(r) {
			room = r
			return true
		}
		d.apply(frees[u], +1)
		return false
	})
	return victims, room, true
}

// reprieve spares victims in the given order, pass after pass until a pass spares none:
// spare(u) takes unit u back on paper and reports whether the candidate still fits, undoing
// itself when it does not. It returns the units that must go, sorted.
func reprieve(victims []int, spare func(u int) bool) []int {
	for {
		kept := make([]int, 0, len(victims))
		for _, u := range victims {
			if !spare(u) {
				kept = append(kept, u)
			}
		}
		done := len(kept) == len(victims)
		victims = kept
		if done {
			break
		}
	}
	sort.Ints(victims)
	return victims
}

// reprieveFirst is the reprieve order: more PDB violations, higher priority, more pods,
// smaller name, smaller index.
func reprieveFirst(units []VictimUnit, i, j int) bool {
	a, b := &units[i], &units[j]
	if a.PDBViolations != b.PDBViolations {
		return a.PDBViolations > b.PDBViolations
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.Pods != b.Pods {
		return a.Pods > b.Pods
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return i < j
}
