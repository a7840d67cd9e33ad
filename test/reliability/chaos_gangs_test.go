package reliability

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chaos operations on pods and PodGroups. Every deletion is graceful: a bound pod stays
// Terminating on its node until the fake kubelet finishes it.

// spreadApp labels the members of spread gangs; their leaders spread across zones.
const spreadApp = "chaos-spread"

// zoneSpread is the leaders' hard spread: at most one leader more in one zone than in the other.
func zoneSpread() []v1.TopologySpreadConstraint {
	return []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: chaosZoneKey, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": spreadApp, "role": "leader"}},
	}}
}

// createPod creates a pod of the chaos namespace at the priority class prio.
func (c *chaos) createPod(s devenv.PodSpec, prio int) error {
	s.Namespace = c.w.ns
	p := devenv.NewPod(s)
	pc := chaosPriorities[prio]
	p.Spec.PriorityClassName, p.Spec.Priority = pc.Name, ptr.To(pc.Value)
	if _, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).Create(c.w.ctx, p, metav1.CreateOptions{}); err != nil {
		return err
	}
	c.prio[s.Name] = pc.Value
	return nil
}

// createMember creates the gang's next member; a spread gang without a leader gets one.
func (c *chaos) createMember(g *chaosGang) {
	name := fmt.Sprintf("%s-%d", g.name, g.next)
	g.next++
	s := devenv.PodSpec{Name: name, Group: g.name, GPUs: 1, Apart: true}
	leader := g.spread && g.leader == ""
	if g.spread {
		s.Labels = map[string]string{"app": spreadApp, "role": "worker"}
	}
	if leader {
		s.Labels["role"], s.Spread = "leader", zoneSpread()
	}
	if c.createPod(s, g.prio) == nil {
		g.members = append(g.members, name)
		if leader {
			g.leader = name
		}
	}
}

func (c *chaos) createPodGroup(g *chaosGang, minMember int) {
	pg := devenv.NewPodGroup(c.w.ns, g.name, int32(minMember), domainKey, 20)
	if grp := g.group; grp != nil {
		pg.Labels = map[string]string{groupLabel: grp.name}
		pg.Annotations[groupLabel+"-size"] = strconv.Itoa(grp.size)
		if grp.key != "" {
			pg.Annotations[groupLabel+"-topology-key"] = grp.key
		}
	}
	_, _ = c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Create(c.w.ctx, pg, metav1.CreateOptions{})
}

// addGang records a new gang of size members at priority class prio.
func (c *chaos) addGang(size, prio int, grp *chaosGroup) *chaosGang {
	c.seq++
	g := &chaosGang{name: fmt.Sprintf("g%03d", c.seq), size: size, prio: prio, group: grp}
	c.gangs[g.name] = g
	if grp != nil {
		grp.partners = append(grp.partners, g.name)
		c.groupOf[g.name] = grp
	}
	return g
}

// form creates the gang's PodGroup and members, members first or PodGroup first.
func (c *chaos) form(g *chaosGang) {
	memberFirst := c.rng.Intn(2) == 0
	if !memberFirst {
		c.createPodGroup(g, g.size)
	}
	for i := 0; i < g.size; i++ {
		c.createMember(g)
	}
	if memberFirst {
		c.createPodGroup(g, g.size)
	}
}

// newGang creates a gang of 2 or 3 (one in four with a spread leader), or, three times in
// ten, a placement group of two partners.
func (c *chaos) newGang() {
	prio := c.rng.Intn(len(chaosPriorities))
	if c.rng.Intn(10) < 3 {
		c.newGroup(prio)
		return
	}
	g := c.addGang(2+c.rng.Intn(2), prio, nil)
	g.spread = c.rng.Intn(4) == 0
	c.form(g)
	c.count("new_gang")
}

// newGroup creates a placement group of two partners at one priority: either both in one
// domain (1 or 2 members each, 3 at most) or, with the zone as the group key, each in a
// domain of one zone (2 or 3 members each).
func (c *chaos) newGroup(prio int) {
	c.seq++
	grp := &chaosGroup{name: fmt.Sprintf("grp%03d", c.seq), size: 2}
	sizes := [][]int{{1, 1}, {1, 2}, {2, 1}}[c.rng.Intn(3)]
	if c.rng.Intn(2) == 0 {
		grp.key = chaosZoneKey
		sizes = []int{2 + c.rng.Intn(2), 2 + c.rng.Intn(2)}
	}
	for _, n := range sizes {
		c.form(c.addGang(n, prio, grp))
	}
	c.count("new_group")
}

// deletePod deletes a pod gracefully.
func (c *chaos) deletePod(name string) {
	_ = c.w.cp.Client.CoreV1().Pods(c.w.ns).Delete(c.w.ctx, name, metav1.DeleteOptions{})
}

// dropMember deletes the gang's i-th member and records the cut: the gang may be short of
// the members bound before it.
func (c *chaos) dropMember(g *chaosGang, i int) {
	name := g.members[i]
	c.deletePod(name)
	c.cuts[g.name] = time.Now()
	if g.leader == name {
		g.leader = ""
	}
	g.members = slices.Delete(g.members, i, i+1)
}

// boundNodes returns the nodes of the gang's bound live members; all is true when every
// member is bound.
func (c *chaos) boundNodes(g *chaosGang) (nodes []string, all bool) {
	all = len(g.members) > 0
	for _, m := range g.members {
		p, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).Get(c.w.ctx, m, metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			nodes = append(nodes, p.Spec.NodeName)
		} else {
			all = false
		}
	}
	return nodes, all
}

// hasBound reports whether any member of the gang is bound.
func (c *chaos) hasBound(g *chaosGang) bool {
	for _, m := range g.members {
		if p, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).Get(c.w.ctx, m, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" {
			return true
		}
	}
	return false
}

// replaceMember deletes one member of a gang that is still forming (none of its members is
// bound; one may wait at Permit) and creates a replacement.
func (c *chaos) replaceMember() {
	g := c.pick()
	if g == nil || len(g.members) == 0 || c.hasBound(g) {
		return
	}
	c.dropMember(g, c.rng.Intn(len(g.members)))
	c.createMember(g)
	c.count("replace_member")
}

// replaceBoundMember deletes one member of a fully bound gang and creates its replacement at
// once, as a controller would. The gang is short until the Terminating member is gone and
// the replacement binds in the gang's domain; the chaos leaves the gang's nodes alone
// meanwhile (a user who removes the capacity a gang waits for keeps it short, by design).
func (c *chaos) replaceBoundMember() {
	g := c.pick()
	if g == nil {
		return
	}
	nodes, all := c.boundNodes(g)
	if !all {
		return
	}
	for _, n := range nodes {
		c.protected[n] = g.name
	}
	c.dropMember(g, c.rng.Intn(len(g.members)))
	c.createMember(g)
	c.count("replace_bound_member")
}

// restartGang deletes every member of a fully bound gang and creates as many replacements
// while the old members are still Terminating (a whole-gang restart).
func (c *chaos) restartGang() {
	g := c.pick()
	if g == nil {
		return
	}
	if _, all := c.boundNodes(g); !all {
		return
	}
	n := len(g.members)
	for len(g.members) > 0 {
		c.dropMember(g, 0)
	}
	for i := 0; i < n; i++ {
		c.createMember(g)
	}
	c.count("restart_gang")
}

// respawn re-creates the members a gang lost to preemption (the pods the scheduler evicted:
// gone or Terminating), up to the gang's size, as the gang's controller would.
func (c *chaos) respawn() {
	g := c.pick()
	if g == nil {
		return
	}
	live := g.members[:0:0]
	for _, m := range g.members {
		if p, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).Get(c.w.ctx, m, metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
			live = append(live, m)
		} else if g.leader == m {
			g.leader = ""
		}
	}
	if len(live) == len(g.members) && len(live) >= g.size {
		return
	}
	g.members = live
	for len(g.members) < g.size {
		before := len(g.members)
		if c.createMember(g); len(g.members) == before {
			break
		}
	}
	c.count("respawn")
}

// finishGang deletes a whole gang (pods and PodGroup), freeing its capacity; a partner
// finishes with its whole placement group.
func (c *chaos) finishGang() {
	g := c.pick()
	if g == nil {
		return
	}
	names := []string{g.name}
	if g.group != nil {
		names = g.group.partners
	}
	for _, name := range names {
		c.finishNamed(name)
	}
	c.count("finish_gang")
}

// finishNamed deletes gang name's pods and PodGroup.
func (c *chaos) finishNamed(name string) {
	p := c.gangs[name]
	if p == nil {
		return
	}
	for _, m := range p.members {
		c.deletePod(m)
	}
	_ = c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Delete(c.w.ctx, p.name, metav1.DeleteOptions{})
	delete(c.gangs, p.name)
}

// newStandalone creates a one-GPU standalone pod at a random priority.
func (c *chaos) newStandalone() {
	c.seq++
	name := fmt.Sprintf("s%03d", c.seq)
	if c.createPod(devenv.PodSpec{Name: name, GPUs: 1}, c.rng.Intn(len(chaosPriorities))) == nil {
		c.standalone = append(c.standalone, name)
		c.count("new_standalone")
	}
}

// finishStandalone deletes a standalone pod.
func (c *chaos) finishStandalone() {
	if len(c.standalone) == 0 {
		return
	}
	i := c.rng.Intn(len(c.standalone))
	c.deletePod(c.standalone[i])
	c.standalone = slices.Delete(c.standalone, i, i+1)
	c.count("finish_standalone")
}

// recreatePodGroup deletes and re-creates the PodGroup of a gang with no bound member.
func (c *chaos) recreatePodGroup() {
	g := c.pick()
	if g == nil || c.hasBound(g) {
		return
	}
	pg, err := c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Get(c.w.ctx, g.name, metav1.GetOptions{})
	if err != nil {
		return
	}
	_ = c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Delete(c.w.ctx, g.name, metav1.DeleteOptions{})
	c.createPodGroup(g, int(pg.Spec.MinMember))
	c.count("recreate_podgroup")
}

// lowerMinMember lowers a gang's minMember by one (never below 1).
func (c *chaos) lowerMinMember() {
	g := c.pick()
	if g == nil {
		return
	}
	pg, err := c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Get(c.w.ctx, g.name, metav1.GetOptions{})
	if err != nil || pg.Spec.MinMember <= 1 {
		return
	}
	pg.Spec.MinMember--
	if _, err := c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Update(c.w.ctx, pg, metav1.UpdateOptions{}); err == nil {
		c.count("lower_min_member")
	}
}
