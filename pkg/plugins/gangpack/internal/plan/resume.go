package plan

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Why a previous leader's nomination is not resumed (the reason of
// gangpack.pinGang.nominated_dropped); the gang then plans as any unpinned gang does.
const (
	NominatedPinned         = "pinned"           // the gang has a pin already
	NominatedMembersMissing = "members_missing"  // fewer live members than the gang needs
	NominatedNone           = "member_deleted"   // no pending member carries a nomination any more
	NominatedComplete       = "complete"         // minMember members are placed already
	NominatedNodeGone       = "node_gone"        // a nominated node is not in the snapshot
	NominatedRelabelled     = "relabelled"       // a nominated node lacks the gang's topology key
	NominatedSplit          = "split"            // nominated or placed members span two domains
	NominatedNoRoom         = "no_room"          // the domain no longer fits the gang's remaining need
	NominatedHoldCap        = "hold_cap"         // the namespace has maxHoldsPerNamespace holds
	NominatedReserved       = "reserved"         // other gangs' reservations leave too little room
	NominatedPodGroupChange = "podgroup_changed" // the PodGroup changed since the nomination
	NominatedPodGroupGone   = "podgroup_missing" // the PodGroup is not in the informer
	NominatedPartner        = "partner"          // a placement group's partner plans with its group
)

// Resume pins a gang a previous leader was forming to the domain its pending members are
// nominated to, when the nominations still hold (docs/design.md §12): every nominated node
// exists and carries the gang's current topology key with one value, the placed members (if
// any) sit in that domain, and the domain still fits the gang's remaining need next to the
// other gangs' reservations. The pin is an ordinary forming hold (the gang's timeout arms
// with it); its reservation puts one slot on each nominated member's node, and the rest where
// the usual arithmetic puts it, away from the nodes later is nominated to when it fits so:
// later are the nominated members of the gangs resumed after this one, whose nominated slots
// come before anyone's rest. pod is one of the gang's pending members. Resume returns why it
// did not pin, "" when it did.
func (pl *Planner) Resume(logger klog.Logger, pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo, later []*v1.Pod) string {
	reason, nominated := pl.resume(logger, pod, info, nodes, later)
	if reason != "" {
		logger.V(4).Info("gangpack.pinGang.nominated_dropped", "pod", klog.KObj(pod), "gang", info.Key,
			"topologyKey", info.TopologyKey, "reason", reason, "nominated", nominated)
	}
	return reason
}

func (pl *Planner) resume(logger klog.Logger, pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo, later []*v1.Pod) (string, map[string]int) {
	if pl.read.Pinned(info.Key) {
		return NominatedPinned, nil
	}
	// NoEffects: nothing is recorded or woken while the nominations are judged; the pin
	// below is the ledger's.
	p := pl.newCycle(logger, pod, info, nodes, pl.reading(pod, info, nodes), NoEffects{})
	if p.split() {
		return NominatedSplit, nil
	}
	if st := p.collectTemplates(); st != nil {
		return NominatedMembersMissing, nil
	}
	if info.MinMember-len(p.placed) <= 0 {
		return NominatedComplete, nil
	}
	domain, nominated, counts, reason := p.nominatedDomain()
	if reason != "" {
		return reason, counts
	}
	if len(p.placed) > 0 && p.placed[0].Domain != domain {
		return NominatedSplit, counts
	}
	p.buildGang()
	plans := p.planOver(p.nodesOfDomain(info.TopologyKey, domain))
	if dp := plans[domain]; dp == nil || dp.Room < p.need {
		return NominatedNoRoom, counts
	}
	res, ok := p.nominatedReservation(domain, nominated, later)
	if !ok {
		return NominatedNoRoom, counts
	}
	if pl.atHoldCap(info) {
		return NominatedHoldCap, counts
	}
	c, outcome := pl.fx.Pin(placement.PinRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Domain: domain,
		Reserved: res, Capacity: p.capacity(), Remaining: p.need, MinMember: info.MinMember, Resumed: true}, info, "")
	switch outcome {
	case placement.AlreadyPinned:
		return NominatedPinned, counts
	case placement.HeldByOther:
		return NominatedReserved, counts
	}
	metrics.CountPin(metrics.PinNominated)
	logger.V(4).Info("gangpack.pinGang.result", "pod", klog.KObj(pod), "gang", info.Key, "topologyKey", c.Key,
		"domain", c.Domain, "source", "nominated", "need", p.need, "remaining", c.Remaining, "nominated", counts,
		"reserved", res.Members())
	return "", counts
}

// nominatedDomain finds the one domain the gang's nominated templates point at: each
// nominated node must be in the snapshot and carry the gang's topology key, all with one
// value. It returns the domain, the nominated templates, and the nominated members per node.
func (p *cycle) nominatedDomain() (string, []*v1.Pod, map[string]int, string) {
	infos := p.pl.nodes()
	domain := ""
	var nominated []*v1.Pod
	counts := map[string]int{}
	for _, t := range p.templates {
		name := t.Status.NominatedNodeName
		if name == "" {
			continue
		}
		counts[name]++
		ni, err := infos.Get(name)
		if err != nil || ni.Node() == nil {
			return "", nil, counts, NominatedNodeGone
		}
		d := ni.Node().Labels[p.info.TopologyKey]
		switch {
		case d == "":
			return "", nil, counts, NominatedRelabelled
		case domain != "" && d != domain:
			return "", nil, counts, NominatedSplit
		}
		domain = d
		nominated = append(nominated, t)
	}
	if domain == "" {
		return "", nil, nil, NominatedNone
	}
	return domain, nominated, counts, ""
}

// nominatedIn returns the templates nominated to a node of the domain (as the last planning
// saw it).
func (p *cycle) nominatedIn(domain string) []*v1.Pod {
	names := map[string]struct{}{}
	for _, n := range p.nodesIn(domain) {
		names[n.Name] = struct{}{}
	}
	var out []*v1.Pod
	for _, t := range p.templates {
		if _, ok := names[t.Status.NominatedNodeName]; ok {
			out = append(out, t)
		}
	}
	return out
}

// nominatedReservation is the room a resumed gang reserves in the domain: one slot for each
// nominated template on its node (up to need), then the rest of need spread by the usual
// matching over what is left, away from the nodes later's pods are nominated to when it fits
// so. ok is false when the nominated nodes cannot take their members or the rest does not fit.
func (p *cycle) nominatedReservation(domain string, nominated, later []*v1.Pod) (placement.Reservation, bool) {
	if len(nominated) > p.need {
		nominated = nominated[:p.need]
	}
	want := map[string]int{}
	for _, t := range nominated {
		want[t.Status.NominatedNodeName]++
	}
	nodes := p.nodesIn(domain)
	counts := map[string]int{}
	rest := make([]topology.Node, 0, len(nodes))
	taken := 0
	for _, n := range nodes {
		k := want[n.Name]
		if k == 0 {
			rest = append(rest, n)
			continue
		}
		if topology.NodeRoom(&p.gang, &n) < k {
			return nil, false
		}
		counts[n.Name] = k
		taken += k
		if !p.gang.Apart { // members kept apart take one node each
			rest = append(rest, lessCopies(&p.gang, n, k))
		}
	}
	if taken < len(nominated) {
		return nil, false // a nominated node is not in the domain's planning
	}
	if left := p.need - taken; left > 0 {
		g := p.gangWithout(nominated, left)
		got, n := assignAround(&g, rest, left, later)
		if n < left {
			return nil, false
		}
		for name, k := range got {
			counts[name] += k
		}
	}
	return SlotsOf(&p.gang, nodes, counts), true
}

// assignAround places want members over nodes with the requests of the pods in claims taken
// from the nodes they are nominated to (the nominated members of gangs resumed later, whose
// slots come first); when that does not fit, over the nodes as they are.
func assignAround(g *topology.Gang, nodes []topology.Node, want int, claims []*v1.Pod) (map[string]int, int) {
	if len(claims) > 0 {
		on := map[string][]*v1.Pod{}
		for _, c := range claims {
			on[c.Status.NominatedNodeName] = append(on[c.Status.NominatedNodeName], c)
		}
		left := make([]topology.Node, len(nodes))
		for i, n := range nodes {
			left[i] = n
			for _, c := range on[n.Name] {
				left[i] = lessRequest(g, left[i], gang.Request(c), 1)
			}
		}
		if got, n := topology.Assign(g, left, want); n >= want {
			return got, n
		}
	}
	return topology.Assign(g, nodes, want)
}

// lessCopies returns the node with k member copies taken from its free room; a shape that
// no longer fits what is left no longer fits the node.
func lessCopies(g *topology.Gang, n topology.Node, k int) topology.Node {
	each, _ := topology.PerCopy(g, &n)
	req := make(topology.Resources, len(each))
	for r, q := range each {
		req[r] = int64(k) * q
	}
	return lessRequest(g, n, req, int64(k))
}

// lessRequest returns the node with req taken from its free room and pods from its free pod
// count; a shape that no longer fits what is left no longer fits the node.
func lessRequest(g *topology.Gang, n topology.Node, req topology.Resources, pods int64) topology.Node {
	n.Free = maps.Clone(n.Free)
	for r, q := range req {
		n.Free[r] -= q
	}
	n.FreePods -= pods
	fits := slices.Clone(n.Fits)
	for s := range fits {
		fits[s] = fits[s] && n.FreePods > 0 && s < len(g.Shapes) && topology.Within(g.Shapes[s], n.Free)
	}
	n.Fits = fits
	return n
}

// gangWithout is the gang without the given templates (their shapes counted out), to place
// need more members.
func (p *cycle) gangWithout(gone []*v1.Pod, need int) topology.Gang {
	g := p.gang
	g.Need = need
	g.Siblings = append([]int(nil), p.gang.Siblings...)
	for _, t := range gone {
		if t == p.templates[0] {
			g.Current = -1 // the current member is placed: its shape counts its siblings only
			continue
		}
		if s := p.shapeOf(t); s >= 0 && g.Siblings[s] > 0 {
			g.Siblings[s]--
		}
	}
	return g
}

// shapeOf is the index of the template's shape class (the merged class past maxShapes).
func (p *cycle) shapeOf(t *v1.Pod) int {
	k := p.pl.shapes.key(t)
	merged := -1
	for i, c := range p.classes {
		if c.key == k {
			return i
		}
		if len(c.key) > 7 && c.key[:7] == "merged:" {
			merged = i
		}
	}
	return merged
}
