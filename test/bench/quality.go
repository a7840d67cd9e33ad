package bench

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// seqPrefix marks the namespaces of gangs the workload creates one at a time, each after the
// previous one is bound (GangLatency): their latency is placement without queueing.
const seqPrefix = "seq-"

// preemptorPrefix marks the namespaces of the high-priority gangs of the preemption workload
// (Preempt): their latency is time to bound including the victims' eviction.
const preemptorPrefix = "prio-high"

// Placement quality arithmetic of the observer, free of Kubernetes types (quality_test.go).

type nodeCap struct {
	name, domain string
	gpus         int64
}

type cluster struct{ nodes []nodeCap }

type podSample struct {
	gang       string // "" for a standalone pod
	group      string // the would-be placement group (groupLabel); "" when none
	created    time.Time
	bound      time.Time // zero if never bound
	node       string
	gpus       int64
	deleted    bool // deleted before the end of the workload
	neverBound bool // deleted before it was bound
}

type quality struct {
	pods, podsBound                int
	gangs, gangsPlaced, gangsSplit int
	gangsPartial                   int
	liveGangs, liveGangsWhole      int
	offlineBestFit                 int
	latencies                      []time.Duration // per placed gang: last member created -> last member bound
	seqLatencies                   []time.Duration // the same for gangs in namespaces "seq-*" (created one at a time)
	preemptorLatencies             []time.Duration // the same for gangs in namespaces "prio-high*" (preemptors)
	preemptorsSplit                int             // preemptor gangs whose bound members span domains
	freeGPUs, strandedGPUs         int64
	// Deletions of bound gang members (by the workload or by a preemption): gangs that lost
	// at least one bound member, gangs that lost some but kept others bound (partly evicted:
	// the survivors hold GPUs a gang-blind eviction made useless), bound members deleted, and
	// the GPUs the partly evicted gangs' surviving bound members still hold at the end.
	gangsEvicted, gangsPartlyEvicted int
	podsEvicted                      int
	partlyEvictedHeldGPUs            int64
	// Would-be placement groups (pods labelled groupLabel, workload Partners): groups, groups
	// with every member bound, groups whose bound members span more than one domain (their
	// gangs apart, or a gang split), and per placed group the last member created -> last
	// member bound.
	groups, groupsPlaced, groupsApart int
	groupLatencies                    []time.Duration
}

type gangSample struct {
	key         string
	members     []podSample // members that were not deleted before being bound
	firstSeen   time.Time
	live        bool // some member still exists at the end
	liveMembers int
	liveBound   int
	evicted     int   // members deleted after they were bound
	liveGPUs    int64 // GPUs of the bound members alive at the end
}

func evaluate(cl cluster, pods []podSample) quality {
	var q quality
	domainOf := map[string]string{}
	free := map[string]int64{}
	for _, n := range cl.nodes {
		domainOf[n.name] = n.domain
		free[n.name] = n.gpus
	}
	gangs := map[string]*gangSample{}
	var order []*gangSample
	for _, p := range pods {
		q.pods++
		if p.node != "" {
			q.podsBound++
			if !p.deleted {
				free[p.node] -= p.gpus
			}
		}
		if p.gang == "" {
			continue
		}
		g := gangs[p.gang]
		if g == nil {
			g = &gangSample{key: p.gang, firstSeen: p.created}
			gangs[p.gang] = g
			order = append(order, g)
		}
		if p.created.Before(g.firstSeen) {
			g.firstSeen = p.created
		}
		if !p.deleted {
			g.live = true
			g.liveMembers++
			if p.node != "" {
				g.liveBound++
				g.liveGPUs += p.gpus
			}
		} else if p.node != "" {
			g.evicted++
		}
		if !p.neverBound {
			g.members = append(g.members, p)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if !order[i].firstSeen.Equal(order[j].firstSeen) {
			return order[i].firstSeen.Before(order[j].firstSeen)
		}
		return order[i].key < order[j].key
	})

	minSize, memberGPUs := math.MaxInt, int64(0)
	for _, g := range order {
		q.gangs++
		if len(g.members) > 0 && len(g.members) < minSize {
			minSize = len(g.members)
		}
		var lastCreated, lastBound time.Time
		bound := 0
		domains := map[string]bool{}
		for _, m := range g.members {
			if m.gpus > memberGPUs {
				memberGPUs = m.gpus
			}
			if m.created.After(lastCreated) {
				lastCreated = m.created
			}
			if m.node == "" {
				continue
			}
			bound++
			if d, ok := domainOf[m.node]; ok { // not a node that failed (workload NodeFailure)
				domains[d] = true
			}
			if m.bound.After(lastBound) {
				lastBound = m.bound
			}
		}
		switch {
		case bound > 0 && bound == len(g.members):
			q.gangsPlaced++
			q.latencies = append(q.latencies, lastBound.Sub(lastCreated))
			if strings.HasPrefix(g.key, seqPrefix) {
				q.seqLatencies = append(q.seqLatencies, lastBound.Sub(lastCreated))
			}
			if strings.HasPrefix(g.key, preemptorPrefix) {
				q.preemptorLatencies = append(q.preemptorLatencies, lastBound.Sub(lastCreated))
			}
		case bound > 0:
			q.gangsPartial++
		}
		if len(domains) > 1 {
			q.gangsSplit++
			if strings.HasPrefix(g.key, preemptorPrefix) {
				q.preemptorsSplit++
			}
		}
		if g.evicted > 0 {
			q.gangsEvicted++
			q.podsEvicted += g.evicted
			if g.liveBound > 0 {
				q.gangsPartlyEvicted++
				q.partlyEvictedHeldGPUs += g.liveGPUs
			}
		}
		if g.live {
			q.liveGangs++
			if g.liveBound == g.liveMembers {
				q.liveGangsWhole++
			}
		}
	}
	slices.Sort(q.latencies)
	slices.Sort(q.seqLatencies)
	slices.Sort(q.preemptorLatencies)
	evaluateGroups(&q, domainOf, pods)

	for _, f := range free {
		q.freeGPUs += f
	}
	if memberGPUs > 0 && minSize != math.MaxInt {
		q.strandedGPUs = stranded(cl, free, minSize, memberGPUs)
		q.offlineBestFit = offlineBestFit(cl, pods, order, memberGPUs)
	}
	return q
}

// evaluateGroups counts the would-be placement groups: every pod with a group, members
// deleted before they were bound left out.
func evaluateGroups(q *quality, domainOf map[string]string, pods []podSample) {
	type groupSample struct {
		members, bound         int
		lastCreated, lastBound time.Time
		domains                map[string]bool
	}
	groups := map[string]*groupSample{}
	var keys []string
	for _, p := range pods {
		if p.group == "" || p.neverBound {
			continue
		}
		g := groups[p.group]
		if g == nil {
			g = &groupSample{domains: map[string]bool{}}
			groups[p.group] = g
			keys = append(keys, p.group)
		}
		g.members++
		if p.created.After(g.lastCreated) {
			g.lastCreated = p.created
		}
		if p.node == "" {
			continue
		}
		g.bound++
		g.domains[domainOf[p.node]] = true
		if p.bound.After(g.lastBound) {
			g.lastBound = p.bound
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		q.groups++
		if g.bound == g.members {
			q.groupsPlaced++
			q.groupLatencies = append(q.groupLatencies, g.lastBound.Sub(g.lastCreated))
		}
		if len(g.domains) > 1 {
			q.groupsApart++
		}
	}
	slices.Sort(q.groupLatencies)
}

// slotsByDomain counts, per domain, how many members of memberGPUs each fit on the free
// GPUs of its nodes.
func slotsByDomain(cl cluster, free map[string]int64, memberGPUs int64) map[string]int64 {
	slots := map[string]int64{}
	for _, n := range cl.nodes {
		if n.domain == "" {
			continue
		}
		slots[n.domain] += max(free[n.name], 0) / memberGPUs
	}
	return slots
}

// stranded is the free GPU capacity at the end that sits in domains which can no longer
// host a gang of the workload's smallest size.
func stranded(cl cluster, free map[string]int64, minSize int, memberGPUs int64) int64 {
	slots := slotsByDomain(cl, free, memberGPUs)
	var s int64
	for _, n := range cl.nodes {
		if n.domain != "" && slots[n.domain] < int64(minSize) {
			s += max(free[n.name], 0)
		}
	}
	return s
}

// offlineBestFit is how many of the gangs still alive at the end a sequential best fit
// would place whole inside one domain each, in arrival order, on the capacity left by the
// standalone pods where they ended up: each gang goes to the fitting domain with the
// fewest member slots (ties by name), its members onto the fullest nodes first.
func offlineBestFit(cl cluster, pods []podSample, order []*gangSample, memberGPUs int64) int {
	free := map[string]int64{}
	for _, n := range cl.nodes {
		free[n.name] = n.gpus
	}
	for _, p := range pods {
		if p.gang == "" && p.node != "" && !p.deleted {
			free[p.node] -= p.gpus
		}
	}
	byDomain := map[string][]string{}
	var domains []string
	for _, n := range cl.nodes {
		if n.domain == "" {
			continue
		}
		if byDomain[n.domain] == nil {
			domains = append(domains, n.domain)
		}
		byDomain[n.domain] = append(byDomain[n.domain], n.name)
	}
	sort.Strings(domains)
	placed := 0
	for _, g := range order {
		if !g.live {
			continue
		}
		size := int64(g.liveMembers)
		slots := slotsByDomain(cl, free, memberGPUs)
		best := ""
		for _, d := range domains {
			if slots[d] >= size && (best == "" || slots[d] < slots[best]) {
				best = d
			}
		}
		if best == "" {
			continue
		}
		placed++
		nodes := append([]string(nil), byDomain[best]...)
		sort.SliceStable(nodes, func(i, j int) bool { return free[nodes[i]] < free[nodes[j]] })
		left := size
		for _, n := range nodes {
			for left > 0 && free[n] >= memberGPUs {
				free[n] -= memberGPUs
				left--
			}
		}
	}
	return placed
}

// percentile is the nearest-rank percentile of sorted durations (0 when empty).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
