package gangpack

import (
	"context"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// placedMember is a gang member found on a node of the snapshot (bound or assumed).
type placedMember struct {
	pod    *v1.Pod
	node   string
	domain string
}

// planner carries one PreFilter's planning inputs (placement.md §4.2).
type planner struct {
	pl        *GangPack
	logger    klog.Logger
	pod       *v1.Pod
	info      gangInfo
	all       []fwk.NodeInfo
	placed    []placedMember
	placedSet map[string]struct{}
	templates []*v1.Pod
	need      int

	domainNodes map[string][]string // domain value → node names, over all nodes
	shapeFits   []*podFit
	resources   []string // every resource some shape requests: all a plan reads of a node
	gang        topology.Gang
}

func (pl *GangPack) plan(ctx context.Context, logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, info gangInfo, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p := &planner{pl: pl, logger: logger, pod: pod, info: info, all: nodes}
	key := info.Key

	// P1 owner check.
	c, pinned := pl.store.Get(key)
	if pinned && c.Owner != info.UID {
		waiters := pl.hasWaiters(key, c.ID)
		pl.unwind(logger, key, c.ID, causeOwnerChange, false)
		pl.failed.Clear(placement.GangOwner{Gang: key, Owner: c.Owner})
		if waiters {
			return nil, fwk.NewStatus(fwk.Unschedulable, msgOwnerReleased(key))
		}
		pinned = false
	}
	// P2 topology-key change.
	if pinned && c.Key != info.TopologyKey {
		waiters := pl.hasWaiters(key, c.ID)
		pl.unwind(logger, key, c.ID, causeTopologyChange, false)
		countPin(pinTopologyReplan)
		logger.V(4).Info("gangpack.pinGang.topology_replan", "gang", key, "oldKey", c.Key, "newKey", info.TopologyKey)
		if waiters {
			return nil, fwk.NewStatus(fwk.Unschedulable, msgTopologyReleased(key))
		}
		pinned = false
	}
	// P3 split check.
	p.findPlaced()
	if p.split() {
		countSplitRefused()
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgSplit(key))
	}
	// P4 templates.
	if st := p.collectTemplates(); st != nil {
		return nil, st
	}
	// P5 sibling-affinity wait.
	placedPods := p.placedPods()
	if s := waitsForSibling(pod, p.templates[1:], placedPods); s != nil {
		logger.V(4).Info("gangpack.pinGang.sibling_wait", "pod", klog.KObj(pod), "gang", key, "sibling", klog.KObj(s))
		return nil, fwk.NewStatus(fwk.Unschedulable, msgSiblingWait(s.Namespace, s.Name))
	}
	// P6 spread-anchor wait.
	if !hardSpread(pod) {
		for _, t := range p.templates[1:] {
			if !hardSpread(t) {
				continue
			}
			if waitsForSibling(t, p.templates, placedPods) == nil {
				logger.V(4).Info("gangpack.pinGang.spread_anchor_wait", "pod", klog.KObj(pod), "gang", key, "anchor", klog.KObj(t))
				return nil, fwk.NewStatus(fwk.Unschedulable, msgAnchorWait(t.Namespace, t.Name))
			}
			break
		}
	}
	// P7 committed-pin refresh.
	if pinned && !c.Forming() && len(p.placed) < info.MinMember {
		pl.releaseSilently(logger, key, c.ID)
		if len(p.placed) == 0 {
			countPin(pinStaleReplan)
			logger.V(4).Info("gangpack.pinGang.stale_replan", "gang", key, "domain", c.Domain, "cause", "committed_empty")
		}
		pinned = false
	}
	// P8 planning node set.
	p.buildGang()
	var plans map[string]*topology.DomainPlan
	switch {
	case pinned:
		plans = p.planOver(p.nodesOfDomain(c.Key, c.Domain))
	case len(p.placed) > 0:
		plans = p.planOver(p.nodesOfDomain(info.TopologyKey, p.placed[0].domain))
	default:
		plans = p.planAll()
	}
	pinnedDomain := ""
	if pinned {
		pinnedDomain = c.Domain
	}
	if v := logger.V(4); v.Enabled() { // the room map is built only when it is logged
		v.Info("gangpack.pinGang.enter", "pod", klog.KObj(pod), "gang", key, "topologyKey", info.TopologyKey,
			"need", p.need, "placed", len(p.placed), "pinnedDomain", pinnedDomain, "room", topology.Rooms(plans))
	}

	// P9 stale pin.
	if pinned {
		dp := plans[c.Domain]
		vanished := dp == nil || len(dp.Nodes) == 0
		if vanished || (p.placedIn(c.Domain) == 0 && dp.Room < p.need) {
			cause := "no_room"
			if vanished {
				cause = "domain_gone"
			}
			countPin(pinStaleReplan)
			logger.V(4).Info("gangpack.pinGang.stale_replan", "gang", key, "domain", c.Domain, "cause", cause)
			if pl.hasWaiters(key, c.ID) {
				// Members of this attempt wait at Permit on nodes that left the domain: a
				// silent release would strand them under a dead attempt while a new one
				// admits the rest. Unwind instead and re-plan on the next cycle.
				pl.unwind(logger, key, c.ID, causeTopologyChange, false)
				return nil, fwk.NewStatus(fwk.Unschedulable, msgStaleReleased(c.Domain, key))
			}
			pl.releaseSilently(logger, key, c.ID)
			pinned = false
			if len(p.placed) > 0 {
				plans = p.planOver(p.nodesOfDomain(info.TopologyKey, p.placed[0].domain))
			} else {
				plans = p.planAll()
			}
		}
	}
	// P10 pinned but short.
	if pinned {
		if dp := plans[c.Domain]; len(p.placed) > 0 && dp.Room < p.need {
			return nil, fwk.NewStatus(fwk.Unschedulable, msgPinnedShort(c.Domain, key, dp.Room, p.need))
		}
		return p.narrow(cs, plans, c, "existing")
	}
	// P11 choose a domain.
	if p.split() {
		countSplitRefused()
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgSplit(key))
	}
	if len(p.placed) > 0 {
		return p.adopt(cs, plans)
	}
	if hardSpread(pod) {
		return p.deferredPlan(cs, plans)
	}
	return p.bestFit(cs, plans)
}

// findPlaced scans the snapshot for the gang's members on nodes (bound or assumed).
func (p *planner) findPlaced() {
	p.placed = p.pl.placedMembers(p.info, p.all)
	p.placedSet = make(map[string]struct{}, len(p.placed))
	for _, m := range p.placed {
		p.placedSet[m.pod.Name] = struct{}{}
	}
	sort.Slice(p.placed, func(i, j int) bool { return p.placed[i].pod.Name < p.placed[j].pod.Name })
}

// membersOnNodes returns the gang's members found on the given snapshot nodes (bound or
// assumed), each with its node and its domain under the gang's topology key.
func membersOnNodes(nodes []fwk.NodeInfo, g gangInfo) []placedMember {
	var out []placedMember
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			q := pi.GetPod()
			if q.Namespace == g.Namespace && q.Labels[PodGroupLabel] == g.Name {
				out = append(out, placedMember{pod: q, node: node.Name, domain: node.Labels[g.TopologyKey]})
			}
		}
	}
	return out
}

// split reports members in more than one domain, or on a node without the label.
func (p *planner) split() bool {
	domains := map[string]struct{}{}
	for _, m := range p.placed {
		if m.domain == "" {
			return true
		}
		domains[m.domain] = struct{}{}
	}
	return len(domains) > 1
}

func (p *planner) placedPods() []*v1.Pod {
	out := make([]*v1.Pod, len(p.placed))
	for i, m := range p.placed {
		out[i] = m.pod
	}
	return out
}

func (p *planner) placedIn(domain string) int {
	n := 0
	for _, m := range p.placed {
		if m.domain == domain {
			n++
		}
	}
	return n
}

// collectTemplates is P4: need, templates, the completeness gate and its activation.
func (p *planner) collectTemplates() *fwk.Status {
	pl, info := p.pl, p.info
	p.need = info.MinMember - len(p.placed)
	if p.need < 1 {
		p.need = 1
	}
	if pl.members == nil {
		return fwk.NewStatus(fwk.Error, "gang member lister is unavailable")
	}
	pods, err := pl.members.list(info.Namespace, info.Name)
	if err != nil { // M21
		return fwk.AsStatus(err)
	}
	others := make([]*v1.Pod, 0, len(pods))
	for _, q := range pods {
		if q.Name == p.pod.Name || !live(q) || q.Spec.NodeName != "" {
			continue
		}
		if _, placed := p.placedSet[q.Name]; placed {
			continue
		}
		others = append(others, q)
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	p.templates = append([]*v1.Pod{p.pod}, others...)
	if len(p.templates) < p.need {
		pl.templates.add(info.Key)
		return fwk.NewStatus(fwk.Unschedulable, msgTemplates(info.Key, len(p.templates), p.need))
	}
	if pl.templates.remove(info.Key) {
		n := pl.activateGang(p.logger, triggerTemplatesComplete, info.Namespace, info.Name, p.pod.Name)
		p.logger.V(4).Info("gangpack.templates.complete", "gang", info.Key, "activated", n)
	}
	return nil
}

// buildGang groups the templates into shapes for the planner.
func (p *planner) buildGang() {
	index := map[string]int{}
	g := topology.Gang{Need: p.need, Apart: apart(p.templates)}
	for i, t := range p.templates {
		k := shapeKey(t)
		s, ok := index[k]
		if !ok {
			s = len(g.Shapes)
			index[k] = s
			f := newPodFit(t)
			p.shapeFits = append(p.shapeFits, f)
			for r := range f.request {
				if !slices.Contains(p.resources, r) {
					p.resources = append(p.resources, r)
				}
			}
			g.Shapes = append(g.Shapes, f.request)
			g.Siblings = append(g.Siblings, 0)
		}
		if i == 0 {
			g.Current = s
		} else {
			g.Siblings[s]++
		}
	}
	p.gang = g
}

// nodesOfDomain returns the snapshot nodes whose label key has value domain.
func (p *planner) nodesOfDomain(key, domain string) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, ni := range p.all {
		if n := ni.Node(); n != nil && domain != "" && n.Labels[key] == domain {
			out = append(out, ni)
		}
	}
	return out
}

// planOver computes the per-domain plans over a node set under the gang's topology key.
func (p *planner) planOver(set []fwk.NodeInfo) map[string]*topology.DomainPlan {
	return topology.Plan(&p.gang, p.topologyNodes(set))
}

// topologyNodes translates the labelled nodes of set for the planner.
func (p *planner) topologyNodes(set []fwk.NodeInfo) []topology.Node {
	tn := make([]topology.Node, 0, len(set))
	for _, ni := range set {
		node := ni.Node()
		if node == nil {
			continue
		}
		d := node.Labels[p.info.TopologyKey]
		if d == "" {
			continue
		}
		free, freePods := nodeFreeOf(ni, p.resources)
		fits := make([]bool, len(p.shapeFits))
		for s, f := range p.shapeFits {
			fits[s] = f.fits(ni, free, freePods)
		}
		tn = append(tn, topology.Node{Name: node.Name, Domain: d, Free: free, FreePods: freePods, Fits: fits})
	}
	return tn
}

// nodesFn returns node names of a domain over all snapshot nodes under the gang's key.
func (p *planner) nodesFn() func(string) []string {
	if p.domainNodes == nil {
		p.domainNodes = map[string][]string{}
		for _, ni := range p.all {
			if n := ni.Node(); n != nil {
				if d := n.Labels[p.info.TopologyKey]; d != "" {
					p.domainNodes[d] = append(p.domainNodes[d], n.Name)
				}
			}
		}
	}
	return func(d string) []string { return p.domainNodes[d] }
}

// narrow is P12: restrict the framework to the candidates of the pinned domain.
func (p *planner) narrow(cs fwk.CycleState, plans map[string]*topology.DomainPlan, c placement.Commitment, source string) (*fwk.PreFilterResult, *fwk.Status) {
	dp := plans[c.Domain]
	if dp == nil || len(dp.Candidates) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, msgNoFeasibleNode(c.Domain, p.info.Key))
	}
	cs.Write(pinStateKey, &pinState{Gang: p.info, Domain: c.Domain, ID: c.ID, SoleFit: c.SoleFit})
	p.logger.V(4).Info("gangpack.pinGang.result", "pod", klog.KObj(p.pod), "gang", p.info.Key, "topologyKey", c.Key,
		"domain", c.Domain, "source", source, "need", p.need, "remaining", c.Remaining, "candidates", len(dp.Candidates))
	return &fwk.PreFilterResult{NodeNames: sets.New(dp.Candidates...)}, nil
}

// bestFit is placement.md §4.5.
func (p *planner) bestFit(cs fwk.CycleState, plans map[string]*topology.DomainPlan) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	rooms := topology.Rooms(plans)
	failed := pl.failed.Values(info.owner(), info.TopologyKey)
	req := placement.ChooseRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Need: p.need, Nodes: p.nodesFn(),
		Rank: p.softSpreadRank()}
	req.Rooms = without(rooms, failed)
	res := pl.store.Choose(req)
	if !res.OK && !res.Existing && len(req.Rooms) < len(rooms) {
		pl.failed.Clear(info.owner()) // the lap wraps
		failed = nil
		req.Rooms = rooms
		res = pl.store.Choose(req)
	}
	if res.OK {
		if !res.Existing {
			countPin(pinPinned)
			pl.pinsChanged()
		}
		return p.narrow(cs, plans, res.Commitment, "pinned")
	}
	return nil, p.noFit(rooms, failed, "")
}

// noFit returns M18 (capacity exists but every fitting domain is held) or M17, counting and
// logging the decision. reason overrides the logged reason when non-empty.
func (p *planner) noFit(rooms map[string]int, failed map[string]struct{}, reason string) *fwk.Status {
	key := p.info.Key
	p.parked()
	if _, ok := topology.BestFit(rooms, p.need); ok {
		p.pl.blocked.add(p.pod)
		countPin(pinReserved)
		p.logNoFit(rooms, failed, "reserved")
		return fwk.NewStatus(fwk.Unschedulable, msgNoRoomReserved(key))
	}
	countPin(pinNoFit)
	if reason == "" {
		reason = "capacity"
	}
	p.logNoFit(rooms, failed, reason)
	if d, room, ok := topology.Largest(rooms); ok {
		return fwk.NewStatus(fwk.Unschedulable, msgNoRoomBest(key, d, room, p.need))
	}
	return fwk.NewStatus(fwk.Unschedulable, msgNoRoomNoLabel(key, p.info.TopologyKey))
}

func (p *planner) logNoFit(rooms map[string]int, failed map[string]struct{}, reason string) {
	p.logger.V(4).Info("gangpack.pinGang.no_fit", "pod", klog.KObj(p.pod), "gang", p.info.Key, "topologyKey", p.info.TopologyKey,
		"need", p.need, "room", rooms, "failedDomains", sets.List(sets.KeySet(failed)), "reason", reason)
}

// adopt is placement.md §4.6: pin the domain the placed members already sit in.
func (p *planner) adopt(cs fwk.CycleState, plans map[string]*topology.DomainPlan) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	d := p.placed[0].domain
	remaining := info.MinMember - len(p.placed)
	if remaining < 0 {
		remaining = 0
	}
	c, outcome := pl.store.Pin(placement.PinRequest{Gang: info.Key, Owner: info.UID, Key: info.TopologyKey, Domain: d,
		Nodes: p.nodesFn()(d), Remaining: remaining, SoleFit: true})
	switch outcome {
	case placement.HeldByOther:
		pl.blocked.add(p.pod)
		countPin(pinReserved)
		p.logger.V(4).Info("gangpack.pinGang.adopt_blocked", "pod", klog.KObj(p.pod), "gang", info.Key, "domain", d)
		return nil, fwk.NewStatus(fwk.Unschedulable, msgAdoptReserved(d, info.Key))
	case placement.Pinned:
		countPin(pinAdopted)
		pl.pinsChanged()
	}
	room := 0
	if dp := plans[d]; dp != nil {
		room = dp.Room
	}
	if room < p.need {
		return nil, fwk.NewStatus(fwk.Unschedulable, msgAdoptedShort(d, info.Key, room, p.need))
	}
	return p.narrow(cs, plans, c, "adopted")
}

// deferredPlan is placement.md §4.7: plan candidate domains for a spread anchor without
// pinning; Reserve pins the domain of the node that survives the filters.
func (p *planner) deferredPlan(cs fwk.CycleState, plans map[string]*topology.DomainPlan) (*fwk.PreFilterResult, *fwk.Status) {
	pl, info := p.pl, p.info
	rooms := topology.Rooms(plans)
	eff := pl.store.Effective(info.Key, info.TopologyKey, rooms, p.nodesFn())
	failed := pl.failed.Values(info.owner(), info.TopologyKey)
	eff1 := without(eff, failed)
	if topology.CountFitting(eff1, p.need) == 0 && len(eff1) < len(eff) {
		pl.failed.Clear(info.owner())
		failed = nil
		eff1 = eff
	}
	planned := map[string]*topology.DomainPlan{}
	cands := sets.New[string]()
	for d, room := range eff1 {
		if room >= p.need {
			planned[d] = plans[d]
			cands.Insert(plans[d].Candidates...)
		}
	}
	if len(planned) == 0 {
		return nil, p.noFit(rooms, failed, "")
	}
	if cands.Len() == 0 {
		countPin(pinNoFit)
		p.logNoFit(rooms, failed, "no_candidates")
		return nil, fwk.NewStatus(fwk.Unschedulable, msgNoCandidates(info.Key, len(planned)))
	}
	cs.Write(deferredStateKey, &deferredState{Gang: info, Need: p.need, Planned: planned})
	plannedRooms := make(map[string]int, len(planned))
	for d, dp := range planned {
		plannedRooms[d] = dp.Room
	}
	p.logger.V(4).Info("gangpack.pinGang.deferred", "pod", klog.KObj(p.pod), "gang", info.Key, "need", p.need,
		"planned", plannedRooms, "candidates", cands.Len())
	return &fwk.PreFilterResult{NodeNames: cands}, nil
}

// without returns rooms minus the excluded domains.
func without(rooms map[string]int, excluded map[string]struct{}) map[string]int {
	if len(excluded) == 0 {
		return rooms
	}
	out := make(map[string]int, len(rooms))
	for d, r := range rooms {
		if _, ok := excluded[d]; !ok {
			out[d] = r
		}
	}
	return out
}
