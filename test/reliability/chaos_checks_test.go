package reliability

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chaos scenario's invariants, checked every second on top of devenv.Violations (one
// domain per gang, no node double-booked):
//
//   - no gang short: a gang with bound live members but fewer than minMember is a violation
//     once a member created or bound after the chaos last deleted one of its members (bound
//     more than cutSlack after it) has been bound for bindGrace (binds of members released
//     together land within it), so a gang the chaos made short by deleting members is never
//     reported, and a gang that binds short is;
//   - partners bound inside one domain of their group's key;
//   - every Preempted event names a preemptor of strictly higher priority than its victim;
//   - whole victims: once a pod carries the scheduler's preemption condition, every member of
//     its gang (of every partner of its placement group) that was bound before it carries it
//     too or is gone or Terminating.

const (
	// bindGrace is how long the binds of the members released together may take to land.
	bindGrace = 10 * time.Second
	// cutSlack covers the binds of members released together with a member the chaos deleted
	// (the scheduler may release them before it sees the deletion): a member created before
	// the deletion and bound this soon after it is not held against the scheduler.
	cutSlack = 5 * time.Second
	// evictGrace is how long the scheduler may take to evict every pod of a victim unit after
	// the first one.
	evictGrace = 3 * time.Second
)

// observation is one look at the chaos namespace.
type observation struct {
	now   time.Time
	pods  []v1.Pod
	pgs   map[string]*schedv1alpha1.PodGroup
	nodes map[string]*v1.Node
	// bound maps gangs to their bound live (not Terminating, not finished) members.
	bound map[string][]*v1.Pod
}

// victim is a pod seen with the scheduler's preemption condition.
type victim struct {
	name, gang string
	prio       int32
	at         time.Time
}

func (c *chaos) observe() (*observation, error) {
	o := &observation{now: time.Now(), pgs: map[string]*schedv1alpha1.PodGroup{}, nodes: map[string]*v1.Node{}, bound: map[string][]*v1.Pod{}}
	nodes, err := c.w.cp.Client.CoreV1().Nodes().List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		o.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	pgs, err := c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pgs.Items {
		o.pgs[pgs.Items[i].Name] = &pgs.Items[i]
	}
	pods, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	o.setPods(pods.Items)
	return o, nil
}

// setPods records the pods and indexes the gangs' bound live members.
func (o *observation) setPods(pods []v1.Pod) {
	o.pods = pods
	for i := range o.pods {
		p := &o.pods[i]
		if g := p.Labels[devenv.PodGroupLabel]; g != "" && liveBound(p) {
			o.bound[g] = append(o.bound[g], p)
		}
	}
}

func liveBound(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// condition returns when the pod's condition of type t became true (whole seconds, as the
// API serves it).
func condition(p *v1.Pod, t v1.PodConditionType, reason string) (time.Time, bool) {
	for _, cond := range p.Status.Conditions {
		if cond.Type == t && cond.Status == v1.ConditionTrue && (reason == "" || cond.Reason == reason) {
			return cond.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// boundAt is when the pod was bound: the API server sets PodScheduled when it binds.
func boundAt(p *v1.Pod) (time.Time, bool) { return condition(p, v1.PodScheduled, "") }

// preemptedAt is when the scheduler marked the pod as its preemption victim.
func preemptedAt(p *v1.Pod) (time.Time, bool) {
	return condition(p, v1.DisruptionTarget, v1.PodReasonPreemptionByScheduler)
}

// invariants fails the test on any violation.
func (c *chaos) invariants() {
	c.w.t.Helper()
	// Partial binding is judged by shortGangs, which knows what the chaos deleted.
	o, err := c.observe()
	if err != nil {
		c.fail("check invariants: %v", err)
	}
	if raced := c.racedRelabels(o); len(raced) > 0 {
		for _, g := range raced {
			c.w.t.Logf("gang %s split by a relabel that raced its bind (within %s): finished", g, relabelRace)
			c.finishNamed(g)
			c.count("raced_relabel")
		}
		if o, err = c.observe(); err != nil {
			c.fail("check invariants: %v", err)
		}
	}
	v, err := devenv.Violations(c.w.ctx, c.w.cp.Client, c.w.cp.PodGroups, domainKey, 0, c.w.ns)
	if err != nil {
		c.fail("check invariants: %v", err)
	}
	pv, err := c.preemptionPriorities()
	if err != nil {
		c.fail("check invariants: %v", err)
	}
	v = append(v, c.shortGangs(o)...)
	v = append(v, c.splitGroups(o)...)
	v = append(v, pv...)
	v = append(v, c.partlyEvicted(o)...)
	if len(v) > 0 {
		c.fail("invariant violations:\n%s", strings.Join(v, "\n"))
	}
}

// relabelRace is how close a member's bind and the relabel of its node must be for the chaos
// to call the split they leave a race no scheduler can win: the chaos picks the nodes it
// relabels from domains where it sees no member bound or nominated, but members waiting at
// Permit are invisible in the API, and a relabel the scheduler sees after the member that
// completes the gang checked the nodes (ledger.Permit) lands while the binds are in flight.
// PodScheduled's time has whole seconds, hence the second of slack.
const relabelRace = 2 * time.Second

// racedRelabels returns the gangs (a partner's whole placement group) split across domains
// of domainKey, or of their group's key, with a member bound within relabelRace of its node's
// relabel.
func (c *chaos) racedRelabels(o *observation) []string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(o.bound)) {
		if !c.raced(o, g) {
			continue
		}
		names := []string{g}
		if grp := c.groupOf[g]; grp != nil {
			names = grp.partners
		}
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// raced reports whether gang g is split with a member bound within relabelRace of its node's
// relabel.
func (c *chaos) raced(o *observation, g string) bool {
	near := false
	for _, p := range o.bound[g] {
		at, relabelled := c.relabelled[p.Spec.NodeName]
		bound, ok := boundAt(p)
		if relabelled && ok && bound.Sub(at).Abs() <= relabelRace {
			near = true
		}
	}
	if !near {
		return false
	}
	pods, key := o.bound[g], domainKey
	if grp := c.groupOf[g]; grp != nil {
		pods = nil
		for _, partner := range grp.partners {
			pods = append(pods, o.bound[partner]...)
		}
		if grp.key != "" {
			key = grp.key
		}
	}
	domains := map[string]bool{}
	for _, p := range pods {
		if n := o.nodes[p.Spec.NodeName]; n != nil {
			domains[n.Labels[key]] = true
		}
	}
	if len(domains) > 1 {
		return true
	}
	clear(domains) // a partner's own gang under domainKey
	for _, p := range o.bound[g] {
		if n := o.nodes[p.Spec.NodeName]; n != nil {
			domains[n.Labels[domainKey]] = true
		}
	}
	return len(domains) > 1
}

// shortGangs returns the gangs that are short of minMember through a bind of the scheduler:
// a member created after the chaos last deleted a member of the gang, or bound more than
// cutSlack after that, was bound while the gang stays short.
func (c *chaos) shortGangs(o *observation) []string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(o.bound)) {
		bound, pg := o.bound[g], o.pgs[g]
		if pg == nil || int32(len(bound)) >= pg.Spec.MinMember {
			continue
		}
		cut := c.cuts[g]
		var late []string
		for _, p := range bound {
			at, ok := boundAt(p)
			after := p.CreationTimestamp.After(cut) || at.After(cut.Add(cutSlack))
			if ok && after && o.now.Sub(at) > bindGrace {
				late = append(late, p.Name+" at "+at.Format(time.TimeOnly))
			}
		}
		if len(late) > 0 {
			since := "never"
			if !cut.IsZero() {
				since = cut.Format(time.TimeOnly)
			}
			out = append(out, fmt.Sprintf("gang %s/%s short: %d of %d members bound, %s bound after the chaos last deleted a member (%s) and more than %s ago",
				c.w.ns, g, len(bound), pg.Spec.MinMember, strings.Join(late, ", "), since, bindGrace))
		}
	}
	return out
}

// splitGroups returns the placement groups whose bound partners are in more than one domain
// of the group's key.
func (c *chaos) splitGroups(o *observation) []string {
	var out []string
	seen := map[*chaosGroup]bool{}
	for _, g := range slices.Sorted(maps.Keys(c.groupOf)) {
		grp := c.groupOf[g]
		if seen[grp] {
			continue
		}
		seen[grp] = true
		key := grp.key
		if key == "" {
			key = domainKey
		}
		at := map[string][]string{}
		for _, partner := range grp.partners {
			for _, p := range o.bound[partner] {
				d := ""
				if n := o.nodes[p.Spec.NodeName]; n != nil {
					d = n.Labels[key]
				}
				at[d] = append(at[d], p.Name+"@"+p.Spec.NodeName)
			}
		}
		if len(at) > 1 {
			out = append(out, fmt.Sprintf("placement group %s/%s split across domains of %s: %v", c.w.ns, grp.name, key, at))
		}
	}
	return out
}

// preemptionPriorities checks the Preempted events not checked yet: the preemptor (the
// event's related pod) must have a strictly higher priority than the victim.
func (c *chaos) preemptionPriorities() ([]string, error) {
	evs, err := c.w.cp.Client.CoreV1().Events(c.w.ns).List(c.w.ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range evs.Items {
		if c.seenEvents[string(e.UID)] {
			continue
		}
		c.seenEvents[string(e.UID)] = true
		c.explained[string(e.InvolvedObject.UID)] = true
		victim := e.InvolvedObject.Name
		if e.Related == nil {
			out = append(out, fmt.Sprintf("Preempted event of %s names no preemptor: %q", victim, e.Message))
			continue
		}
		vp, okV := c.prio[victim]
		pp, okP := c.prio[e.Related.Name]
		if !okV || !okP {
			out = append(out, fmt.Sprintf("Preempted event between pods the chaos did not create: %s by %s", victim, e.Related.Name))
		} else if vp >= pp {
			out = append(out, fmt.Sprintf("pod %s (priority %d) preempted by pod %s (priority %d): %q", victim, vp, e.Related.Name, pp, e.Message))
		}
	}
	return out, nil
}

// partlyEvicted records the pods newly seen with the preemption condition and returns the
// victim units (a gang, or every partner of a placement group) with a member bound before a
// victim's eviction that is still bound and live without the condition.
func (c *chaos) partlyEvicted(o *observation) []string {
	for i := range o.pods {
		p := &o.pods[i]
		if at, ok := preemptedAt(p); ok && c.victims[string(p.UID)] == nil {
			c.victims[string(p.UID)] = &victim{name: p.Name, gang: p.Labels[devenv.PodGroupLabel], prio: c.prio[p.Name], at: at}
		}
	}
	var out []string
	for _, uid := range slices.Sorted(maps.Keys(c.victims)) {
		v := c.victims[uid]
		if v.gang == "" || o.now.Sub(v.at) < evictGrace || o.now.Sub(v.at) > time.Minute {
			continue
		}
		unit, gangs := "gang "+c.w.ns+"/"+v.gang, []string{v.gang}
		if grp := c.groupOf[v.gang]; grp != nil {
			unit, gangs = "placement group "+c.w.ns+"/"+grp.name, grp.partners
		}
		var left []string
		for _, g := range gangs {
			for _, p := range o.bound[g] {
				_, evicted := preemptedAt(p)
				if at, ok := boundAt(p); ok && !evicted && at.Before(v.at) {
					left = append(left, p.Name+"@"+p.Spec.NodeName)
				}
			}
		}
		if len(left) > 0 {
			out = append(out, fmt.Sprintf("%s partly evicted: %s preempted at %s, %s bound before and still bound",
				unit, v.name, v.at.Format(time.TimeOnly), strings.Join(left, ", ")))
		}
	}
	return out
}

// unexplainedVictims checks the victims whose Preempted event never arrived (events are
// best effort): such a victim must at least not have the highest priority of the chaos.
func (c *chaos) unexplainedVictims() {
	c.w.t.Helper()
	wrong, err := c.preemptionPriorities()
	if err != nil {
		c.fail("check invariants: %v", err)
	}
	top := chaosPriorities[len(chaosPriorities)-1].Value
	var missing []string
	for _, uid := range slices.Sorted(maps.Keys(c.victims)) {
		if v := c.victims[uid]; !c.explained[uid] {
			missing = append(missing, v.name)
			if v.prio >= top {
				wrong = append(wrong, fmt.Sprintf("pod %s of the highest priority %d preempted", v.name, v.prio))
			}
		}
	}
	if len(missing) > 0 {
		c.w.t.Logf("victims without a Preempted event: %v", missing)
	}
	if len(wrong) > 0 {
		c.fail("invariant violations:\n%s", strings.Join(wrong, "\n"))
	}
}
