package plan

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// The plan cache keeps, for the last few gang signatures (topology key, need, shapes with
// their node constraints, which shape is the current pod's), each domain's translated nodes
// and plan from the last planning over every node. A domain is planned again only when one of
// its nodes changed (the snapshot's NodeInfo generation moves with every pod, assumed pod and
// node update), a node joined or left it, or what other gangs reserve on its nodes changed.
// In a burst of similar gangs most domains are unchanged between two gangs, so an unpinned
// PreFilter reads every node's generation instead of translating and matching every node.
// For a gang whose members take DRA devices, an entry also records the device change its
// device view reflected (Devices.Seq) and is planned again once one of its nodes' devices
// changed after it (Devices.ChangedSince: slices, claim allocations, classes), or the gangs
// reserving on its nodes (whose members' devices are set aside there) changed.

// planCacheSignatures bounds the signatures kept: a burst mixes a few gang sizes and shapes.
const planCacheSignatures = 4

type planCache struct {
	mu    sync.Mutex
	order []string // signatures, least recently used first
	sigs  map[string]*sigCache
	// list identifies the snapshot's node list of the last planning (its first element and
	// length): the scheduler's snapshot keeps each node's NodeInfo at one address, updated in
	// place, and makes a new list only when a node joins or leaves. While the list is the
	// same, an entry's NodeInfos are read directly instead of being looked up by name.
	listFirst fwk.NodeInfo
	listLen   int
}

func newPlanCache() *planCache {
	return &planCache{sigs: map[string]*sigCache{}}
}

// sigCache is the planning of one signature: each domain's entry, and the per-domain maps a
// planning returns, assembled from the entries and reused while none of them changes.
type sigCache struct {
	domains map[string]*domainEntry
	version uint64 // the domain index version out was assembled for
	out     *assembled
}

// assembled is a planning's result over every domain. Its maps are shared by the plannings
// that reuse it and are never modified.
type assembled struct {
	plans    map[string]*topology.DomainPlan
	byDomain map[string][]topology.Node
	rooms    map[string]int
	free     map[string]int64
}

// get returns the cache of sig (creating it, evicting the least recently used signature when
// full). Callers hold c.mu.
func (c *planCache) get(sig string) *sigCache {
	for i, s := range c.order {
		if s == sig {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), sig)
			return c.sigs[sig]
		}
	}
	if len(c.order) == planCacheSignatures {
		delete(c.sigs, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, sig)
	c.sigs[sig] = &sigCache{domains: map[string]*domainEntry{}}
	return c.sigs[sig]
}

// drop forgets sig's planning. Callers hold c.mu.
func (c *planCache) drop(sig string) {
	delete(c.sigs, sig)
	c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == sig })
}

// sameList records the snapshot's node list and reports whether it is the one of the last
// planning. Callers hold c.mu.
func (c *planCache) sameList(all []fwk.NodeInfo) bool {
	same := len(all) > 0 && len(all) == c.listLen && all[0] == c.listFirst
	c.listLen, c.listFirst = len(all), nil
	if len(all) > 0 {
		c.listFirst = all[0]
	}
	return same
}

// domainEntry is one domain's planning for one signature, with what it was computed from.
type domainEntry struct {
	index    []string             // the domain index's node names it was computed for
	infos    []fwk.NodeInfo       // the domain's nodes in the snapshot, sorted by name
	names    []string             // their names
	gens     []int64              // their NodeInfo generations
	reserved []placement.Reserved // what other gangs reserved on each
	nodes    []topology.Node      // the nodes as the planner saw them
	plan     *topology.DomainPlan // nil when no node of the domain is in the snapshot
	room     int                  // member room without the gang's size cap (quality gauges)
	free     int64                // free units of the primary resource (quality gauges)
	devices  bool                 // device room was counted, as of device change devSeq
	devSeq   uint64
}

// devicesChanged reports whether a node's devices may have changed since the entry was
// computed (never for an entry without device room).
type devicesChanged func(e *domainEntry, node string) bool

// current reports whether the entry was computed from these nodes and reservations.
func (e *domainEntry) current(infos []fwk.NodeInfo, others map[string]placement.Reserved, changed devicesChanged) bool {
	if len(infos) != len(e.names) {
		return false
	}
	for i, ni := range infos {
		if ni.Node().Name != e.names[i] || ni.GetGeneration() != e.gens[i] || !sameReserved(others[e.names[i]], e.reserved[i]) ||
			changed(e, e.names[i]) {
			return false
		}
	}
	return true
}

// unchanged reports, without looking nodes up, whether the entry is still current: the
// domain index lists the same nodes, the snapshot's node list is the same (sameList), every
// node the index lists was found in the snapshot under this domain, and no node's NodeInfo or
// reservation changed. A node the lookup skipped (the index saw its relabel before the
// snapshot did) is looked up again on every planning until the snapshot agrees: its NodeInfo
// is in no entry, so no generation would reveal the change.
func (e *domainEntry) unchanged(index []string, sameList bool, others map[string]placement.Reserved, changed devicesChanged) bool {
	if !sameList || !sameSlice(index, e.index) || len(e.infos) != len(index) {
		return false
	}
	for i, ni := range e.infos {
		if ni.GetGeneration() != e.gens[i] || !sameReserved(others[e.names[i]], e.reserved[i]) || changed(e, e.names[i]) {
			return false
		}
	}
	return true
}

// sameSlice reports whether a and b are the same slice (the index never modifies one).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameReserved(a, b placement.Reserved) bool {
	if a.Pods != b.Pods || len(a.Resources) != len(b.Resources) || !slices.Equal(a.Gangs, b.Gangs) {
		return false
	}
	for r, q := range a.Resources {
		if bq, ok := b.Resources[r]; !ok || bq != q {
			return false
		}
	}
	return true
}

// signatureOf is what a domain's plan depends on besides the domain's nodes (and, for a gang
// with devices, the device view).
func signatureOf(key string, g topology.Gang, groups []shapeClass, dev *gangDevices) string {
	var b strings.Builder
	b.WriteString(key)
	b.WriteString("\x00" + strconv.Itoa(g.Need) + "\x00" + strconv.FormatBool(g.Apart) + "\x00" + strconv.Itoa(g.Current))
	for _, sg := range groups {
		req, _ := json.Marshal(sg.request)
		b.WriteString("\x00" + sg.key + "\x00" + string(req) + "\x00" + strconv.Itoa(sg.count))
	}
	if dev != nil {
		for _, sc := range dev.claims {
			b.WriteString("\x00devices\x00")
			if sc != nil {
				b.WriteString(sc.sig)
			}
		}
	}
	return b.String()
}

// planAllCached is planAll through the plan cache; ok is false when the domain index cannot
// answer yet (the caller then plans every node).
func (p *cycle) planAllCached() (map[string]*topology.DomainPlan, bool) {
	domains, version, ok := p.pl.domains.domainsOf(p.info.TopologyKey)
	if !ok || p.pl.plans == nil {
		return nil, false
	}
	resource, hasResource := p.primary, p.hasPrimary
	c := p.pl.plans
	c.mu.Lock()
	defer c.mu.Unlock()
	sig := signatureOf(p.info.TopologyKey, p.gang, p.classes, p.dev)
	sc := c.get(sig)
	if p.refresh(sc, domains, c.sameList(p.all), resource) || sc.version != version || sc.out == nil {
		sc.out, sc.version = assemble(sc.domains), version
	}
	if p.devErr != nil { // planned without some node's devices: keep none of it
		c.drop(sig)
	}
	p.byDomain = sc.out.byDomain
	p.recordQualityOf(sc.out.rooms, sc.out.free, resource, hasResource)
	return sc.out.plans, true
}

// refresh plans again the domains whose entries are no longer current, drops the entries of
// domains that are gone, and reports whether any entry changed.
func (p *cycle) refresh(sc *sigCache, domains map[string][]string, sameList bool, resource string) bool {
	key := p.info.TopologyKey
	lister := p.pl.nodes()
	changed := false
	devChanged := func(e *domainEntry, node string) bool {
		return e.devices && p.pl.devices.ChangedSince(node, e.devSeq)
	}
	for d, names := range domains {
		e := sc.domains[d]
		if e != nil && e.unchanged(names, sameList, p.others, devChanged) {
			continue
		}
		infos := make([]fwk.NodeInfo, 0, len(names))
		for _, name := range names {
			if ni, err := lister.Get(name); err == nil && ni.Node() != nil && ni.Node().Labels[key] == d {
				infos = append(infos, ni)
			}
		}
		if e == nil || !e.current(infos, p.others, devChanged) {
			e, changed = p.planDomain(d, infos, resource), true
			sc.domains[d] = e
		}
		e.index, e.infos = names, infos
	}
	if len(sc.domains) != len(domains) {
		for d := range sc.domains {
			if _, ok := domains[d]; !ok {
				delete(sc.domains, d)
				changed = true
			}
		}
	}
	return changed
}

// assemble builds a planning's per-domain maps from the entries.
func assemble(entries map[string]*domainEntry) *assembled {
	out := &assembled{plans: make(map[string]*topology.DomainPlan, len(entries)),
		byDomain: make(map[string][]topology.Node, len(entries)),
		rooms:    make(map[string]int, len(entries)), free: make(map[string]int64, len(entries))}
	for d, e := range entries {
		if e.plan == nil {
			continue
		}
		out.plans[d], out.byDomain[d], out.rooms[d], out.free[d] = e.plan, e.nodes, e.room, e.free
	}
	return out
}

// planDomain translates and plans one domain's nodes and records what it was computed from.
func (p *cycle) planDomain(d string, infos []fwk.NodeInfo, resource string) *domainEntry {
	e := &domainEntry{
		names:    make([]string, len(infos)),
		gens:     make([]int64, len(infos)),
		reserved: make([]placement.Reserved, len(infos)),
	}
	for i, ni := range infos {
		e.names[i], e.gens[i], e.reserved[i] = ni.Node().Name, ni.GetGeneration(), p.others[ni.Node().Name]
	}
	e.index, e.infos = nil, infos
	if len(infos) == 0 {
		return e
	}
	if p.dev != nil {
		p.dev.unsettled = false
	}
	e.nodes = p.topologyNodes(infos, false, nil)
	if p.dev != nil {
		e.devices, e.devSeq = true, p.dev.seq
		if p.dev.unsettled { // planned again at the next planning (ChangedSince any change after 0)
			e.devSeq = 0
		}
	}
	e.plan = topology.Plan(&p.gang, e.nodes)[d]
	e.room, e.free = domainStats(&p.gang, e.nodes, d, resource)
	return e
}
