package gangpack

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The composition test's invariants, checked after every step. Each has a name (the
// violation's inv) that the table cases and the tolerated set refer to.
const (
	invNoSplit     = "no-split"          // a gang's placed live members share one domain
	invMinMember   = "min-member"        // an admitted member's gang has minMember live members placed
	invDoubleCount = "no-double-count"   // reservations and nominations never exceed a node's free room
	invNoPhantom   = "no-phantom"        // a pending pod's nomination names room held for it
	invHoldEnds    = "hold-deadline"     // a forming reservation ends by min(timeout, 15 min)
	invPreemption  = "preemption"        // lower priority only, whole units, one domain, no storm
	invPartners    = "partners-together" // a placement group's members share one group domain
	invLiveness    = "liveness"          // a pending pod that can be placed is retried without a flush
)

// violation is one invariant failure.
type violation struct {
	inv, msg string
}

// holdID identifies a commitment of one plugin instance.
type holdID struct {
	gen  int
	gang string
	id   uint64
}

// checker keeps what the invariants need beyond the current state.
type checker struct {
	s *sim
	// holds records when each forming commitment was first seen, and its limit.
	holds map[holdID][2]time.Time
	// preemptor is the pod whose PostFilter runs in the current cycle; victims are the
	// evictions of the step, by evictor.
	preemptor *simPod
	evictor   *simPod
	victims   []*simPod
	// placedAtEviction are the pods placed when the step's first eviction happened, with their
	// node: a unit's member pending then, or placed on another node since (rejected with its
	// gang's unwind and placed again), is not one the preemption left behind.
	placedAtEviction map[*simPod]string
	// earlier maps a preemptor (gang, group or pod) to the victims it evicted before.
	earlier map[string][]*simPod
	found   []violation
}

func newChecker(s *sim) *checker {
	return &checker{s: s, holds: map[holdID][2]time.Time{}, earlier: map[string][]*simPod{}}
}

func (c *checker) fail(inv, format string, args ...any) {
	c.found = append(c.found, violation{inv: inv, msg: fmt.Sprintf(format, args...)})
}

// gangKey returns the pod's PodGroup name ("" for a standalone pod).
func gangKey(sp *simPod) string { return sp.pod.Labels[PodGroupLabel] }

// live reports a member that counts: on a node (assumed or bound) and not being deleted.
func placedLive(sp *simPod) bool {
	return sp.state == stWaiting || sp.state == stAllowed || sp.state == stBound
}

// members returns the simulated pods of PodGroup name, in creation order.
func (c *checker) members(name string) []*simPod {
	var out []*simPod
	for _, sp := range c.s.pods {
		if name != "" && gangKey(sp) == name && sp.state != stGone {
			out = append(out, sp)
		}
	}
	return out
}

// admitted checks, when Permit lets a member through, that its gang has minMember live
// members placed (bound, admitted or waiting under the attempt that admits them).
func (c *checker) admitted(sp *simPod) {
	name := gangKey(sp)
	if name == "" {
		return
	}
	pg := c.s.podGroup(name)
	if pg == nil {
		return
	}
	n := 0
	for _, m := range c.members(name) {
		if placedLive(m) {
			n++
		}
	}
	if n < int(pg.Spec.MinMember) {
		c.fail(invMinMember, "%s admitted with %d live members placed, minMember %d", sp.pod.Name, n, pg.Spec.MinMember)
	}
}

// evicted records a victim of the current step's preemption.
func (c *checker) evicted(sp *simPod, _ string) {
	if c.evictor != nil && c.evictor != c.preemptor {
		c.checkPreemption("evictions")
	}
	c.evictor = c.preemptor
	if len(c.victims) == 0 {
		c.placedAtEviction = map[*simPod]string{}
		for _, q := range c.s.pods {
			if placedLive(q) {
				c.placedAtEviction[q] = q.node
			}
		}
	}
	c.victims = append(c.victims, sp)
}

// labelsDiffer reports members placed in different domains under key, both as labelled when
// they were placed and as labelled now (a relabel after placement is not a split). A member
// whose node was deleted is left out: it can never run there (binding it fails, or the pod
// GC deletes it), and docs/design.md section 7.1 counts it as gone ("went away
// (Terminating, failed, its node deleted)"), so its gang, or its partner gangs, re-plan
// without it.
func (c *checker) labelsDiffer(pods []*simPod, key string) (bool, string) {
	then, now := map[string]bool{}, map[string]bool{}
	var where []string
	for _, sp := range pods {
		n := c.s.node(sp.node)
		if n == nil {
			continue
		}
		then[sp.placed[key]] = true
		now[n.Labels[key]] = true
		where = append(where, sp.pod.Name+"@"+sp.node+"("+sp.placed[key]+")")
	}
	return len(then) > 1 && len(now) > 1, strings.Join(where, " ")
}

// step checks the state invariants after a step.
func (c *checker) step(label string) {
	s := c.s
	byGang, byGroup := map[string][]*simPod{}, map[string][]*simPod{}
	var gangs []string
	for _, sp := range s.pods {
		if name := gangKey(sp); name != "" && placedLive(sp) {
			if byGang[name] == nil {
				gangs = append(gangs, name)
			}
			byGang[name] = append(byGang[name], sp)
			if g := sp.pod.Labels[testGroupLabel]; g != "" {
				byGroup[g] = append(byGroup[g], sp)
			}
		}
	}
	for _, g := range gangs {
		if split, where := c.labelsDiffer(byGang[g], testKey); split {
			c.fail(invNoSplit, "%s: gang %s placed across domains: %s", label, g, where)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if split, where := c.labelsDiffer(byGroup[g], testZoneKey); split {
			c.fail(invPartners, "%s: placement group %s across group domains: %s", label, g, where)
		}
	}
	c.checkRoom(label)
	c.checkDevicesHeld(label)
	c.checkNominations(label)
	c.checkHolds(label)
	c.checkPreemption(label)
}

// freeGPUs is the node's allocatable GPUs minus what the pods on it that occupy(sp) request
// (nil: live placed pods; pods being deleted count as gone).
func (c *checker) freeGPUs(n *v1.Node, occupies func(*simPod) bool) int64 {
	if occupies == nil {
		occupies = placedLive
	}
	q := n.Status.Allocatable[v1.ResourceName(testGPU)]
	free := q.Value()
	for _, sp := range c.s.pods {
		if sp.node != n.Name || !occupies(sp) {
			continue
		}
		r := gang.Request(sp.pod)
		free -= r[testGPU]
	}
	return free
}

// checkHolds verifies every forming reservation ends by min(timeout, 15 min).
func (c *checker) checkHolds(label string) {
	s := c.s
	for _, cm := range s.pl.ledger.Pins() {
		if !cm.Forming() {
			continue
		}
		id := holdID{gen: s.gen, gang: cm.Gang, id: cm.ID}
		seen, ok := c.holds[id]
		if !ok {
			limit := 600 * time.Second
			if pg := s.podGroup(strings.TrimPrefix(cm.Gang, testNS+"/")); pg != nil && pg.Spec.ScheduleTimeoutSeconds != nil {
				limit = time.Duration(*pg.Spec.ScheduleTimeoutSeconds) * time.Second
			}
			seen = [2]time.Time{s.now, s.now.Add(min(limit, gang.MaxPermitWait))}
			c.holds[id] = seen
		}
		if s.now.After(seen[1]) {
			c.fail(invHoldEnds, "%s: %s reserves domain %s since %s, past its limit by %s", label, cm.Gang, cm.Domain,
				s.now.Sub(seen[0]), s.now.Sub(seen[1]))
			c.holds[id] = [2]time.Time{seen[0], s.now.Add(time.Hour * 24 * 365)} // once per hold
		}
	}
}

// preemptorKey names who preempts: the placement group, the gang, or the pod.
func preemptorKey(sp *simPod) string {
	if g := sp.pod.Labels[testGroupLabel]; g != "" {
		return "group/" + g
	}
	if g := gangKey(sp); g != "" {
		return "gang/" + g
	}
	return "pod/" + sp.pod.Name
}

// checkPreemption verifies the evictions of the step's preemptor.
func (c *checker) checkPreemption(label string) {
	victims, pr, placedAtEviction := c.victims, c.evictor, c.placedAtEviction
	c.victims, c.evictor, c.placedAtEviction = nil, nil, nil
	if len(victims) == 0 || pr == nil {
		return
	}
	key := preemptorKey(pr)
	for _, v := range c.earlier[key] {
		// A victim evicted again (its eviction escaped or failed) continues the same
		// preemption; a new victim while an earlier one terminates is a second one.
		if v.state == stTerminating && !slices.Contains(victims, v) {
			c.fail(invPreemption, "%s: %s evicted again while its earlier victim %s still terminates", label, key, v.pod.Name)
			break
		}
	}
	c.earlier[key] = victims
	prio := corev1helpers.PodPriority(pr.pod)
	domainKey, domains := testKey, map[string]bool{}
	if gangKey(pr) == "" {
		domainKey = v1.LabelHostname
	} else if pr.pod.Labels[testGroupLabel] != "" {
		domainKey = testZoneKey
	}
	units := map[string]bool{}
	for _, v := range victims {
		if p := corev1helpers.PodPriority(v.pod); p >= prio {
			c.fail(invPreemption, "%s: %s (priority %d) evicted %s of priority %d", label, key, prio, v.pod.Name, p)
		}
		if n := c.s.node(v.node); n != nil && gangKey(v) == "" {
			domains[n.Labels[domainKey]] = true
		}
		if g := gangKey(v); g != "" {
			units[g] = true
			if grp := v.pod.Labels[testGroupLabel]; grp != "" {
				for _, pt := range c.s.pgs {
					if pt.Labels[testGroupLabel] == grp {
						units[pt.Name] = true
					}
				}
			}
		}
	}
	if len(domains) > 1 {
		c.fail(invPreemption, "%s: %s evicted in %d domains under %s", label, key, len(domains), domainKey)
	}
	for u := range units {
		for _, m := range c.members(u) {
			// A member assumed on a node deleted since holds no room (its binding fails).
			if node, ok := placedAtEviction[m]; ok && placedLive(m) && m.node == node && c.s.node(node) != nil {
				c.fail(invPreemption, "%s: %s evicted part of unit %s: %s still placed", label, key, u, m.pod.Name)
				break
			}
		}
	}
	c.checkOwnRoom(label, pr, key)
	c.checkRepair(label, pr, key, victims)
}

// checkRepair: a gang never evicts its own members, and a gang with bound members (a degraded
// gang repairing) buys room only in their domain: every victim unit has a victim there.
func (c *checker) checkRepair(label string, pr *simPod, key string, victims []*simPod) {
	name := gangKey(pr)
	if name == "" {
		return
	}
	domain := ""
	for _, m := range c.members(name) {
		if m.state == stBound && c.s.node(m.node) != nil {
			domain = c.s.node(m.node).Labels[testKey]
		}
	}
	inDomain := map[string]bool{}
	for _, v := range victims {
		if gangKey(v) == name {
			c.fail(invPreemption, "%s: %s evicted its own member %s", label, key, v.pod.Name)
		}
		unit := preemptorKey(v) // a victim's unit: its placement group, gang or pod
		n := c.s.node(v.node)
		inDomain[unit] = inDomain[unit] || (n != nil && n.Labels[testKey] == domain)
	}
	if domain == "" || pr.pod.Labels[testGroupLabel] != "" {
		return
	}
	for unit, in := range inDomain {
		if !in {
			c.fail(invPreemption, "%s: %s, bound in domain %s, evicted %s outside it", label, key, domain, unit)
		}
	}
}

// checkOwnRoom: a gang does not preempt while the room its own Terminating members give back
// (with what is free) already fits the members it still needs in some domain.
func (c *checker) checkOwnRoom(label string, pr *simPod, key string) {
	name := gangKey(pr)
	pg := c.s.podGroup(name)
	if name == "" || pg == nil || pr.pod.Labels[testGroupLabel] != "" || gang.HardSpread(pr.pod) {
		return
	}
	own, placed, domain := false, 0, ""
	for _, m := range c.members(name) {
		switch {
		case m.state == stTerminating:
			own = true
		case placedLive(m):
			placed++
			domain = m.placed[testKey]
		}
	}
	need := int64(pg.Spec.MinMember) - int64(placed)
	if !own || need <= 0 {
		return
	}
	room := map[string]int64{}
	for _, n := range c.s.nodes {
		if len(n.Spec.Taints) > 0 || (domain != "" && n.Labels[testKey] != domain) {
			continue
		}
		room[n.Labels[testKey]] += max(c.freeGPUs(n, func(sp *simPod) bool {
			return placedLive(sp) || (sp.state == stTerminating && gangKey(sp) != name)
		}), 0)
	}
	for d, r := range room {
		if r >= need {
			c.fail(invPreemption, "%s: %s preempted though domain %s has room for its %d members once its own Terminating members are gone", label, key, d, need)
			return
		}
	}
}
