package reliability

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moirai-internal/ome-scheduler/test/testenv"
)

// chaosDuration is how long TestChaosDuringFormation injects faults: OME_SOAK_DURATION
// (`make soak` sets it), else 25 s.
func chaosDuration(t *testing.T) time.Duration {
	if s := os.Getenv("OME_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("OME_SOAK_DURATION: %v", err)
		}
		return d
	}
	return 25 * time.Second
}

// Gangs are created member-first and PodGroup-first in random order while members of forming
// and of bound gangs are deleted (gracefully: they stay Terminating for a while) and replaced,
// bound gangs restart whole, whole gangs finish, free nodes are cordoned, deleted, re-created and
// relabelled, PodGroups are deleted and re-created and minMember lowered. Invariants are
// checked every second; at the end every gang is either whole or not placed at all.
func TestChaosDuringFormation(t *testing.T) {
	w := newWorld(t)
	const domains, per = 10, 3
	w.domains(domains, per)
	args := testenv.DefaultArgs + "\ngcIntervalSeconds: 2"
	args = strings.Replace(args, "gcIntervalSeconds: 60\n", "", 1)
	w.scheduler("sched", testenv.Profile{Args: args})
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	seed := rng.Int63()
	rng = rand.New(rand.NewSource(seed))
	t.Logf("chaos seed %d", seed)
	c := &chaos{w: w, rng: rng, gangs: map[string]*chaosGang{}}
	deadline := time.Now().Add(chaosDuration(t))
	lastCheck := time.Now()
	ops := 0
	for time.Now().Before(deadline) {
		c.step()
		ops++
		time.Sleep(time.Duration(50+rng.Intn(150)) * time.Millisecond)
		if time.Since(lastCheck) > time.Second {
			c.invariants()
			lastCheck = time.Now()
		}
	}
	t.Logf("%d chaos operations: %v", ops, c.counts)
	// Settle: nodes back, then every gang must end whole or entirely unplaced.
	c.uncordonAll()
	err := wait.PollUntilContextTimeout(w.ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		c.invariants()
		v, err := testenv.Violations(ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns)
		return err == nil && len(v) == 0, nil
	})
	if err != nil {
		v, _ := testenv.Violations(w.ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns)
		t.Fatalf("gangs still partially bound after settling:\n%s", strings.Join(v, "\n"))
	}
	if n := w.boundCount(); n < 4 {
		t.Fatalf("only %d pods bound after the chaos run: the scenario placed nothing", n)
	} else {
		t.Logf("%d pods bound at the end, every gang whole", n)
	}
}

type chaosGang struct {
	name    string
	members []string
	next    int
}

type chaos struct {
	w      *world
	rng    *rand.Rand
	gangs  map[string]*chaosGang
	seq    int
	counts map[string]int
	// protected maps nodes of gangs being repaired to the gang: not cordoned, relabelled or
	// re-created until the gang is whole again.
	protected map[string]string
	// repairs maps gangs whose bound member was replaced to when.
	repairs map[string]time.Time
}

func (c *chaos) count(op string) {
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[op]++
}

func (c *chaos) step() {
	switch r := c.rng.Intn(100); {
	case r < 30:
		c.newGang()
	case r < 38:
		c.replaceMember()
	case r < 42:
		c.replaceBoundMember()
	case r < 45:
		c.restartGang()
	case r < 60:
		c.finishGang()
	case r < 70:
		c.cordonFreeNode()
	case r < 75:
		c.recreatePodGroup()
	case r < 80:
		c.lowerMinMember()
	case r < 88:
		c.relabelFreeNode()
	case r < 93:
		c.recreateFreeNode()
	default:
		c.uncordonAll()
	}
}

func (c *chaos) pick() *chaosGang {
	if len(c.gangs) == 0 {
		return nil
	}
	i := c.rng.Intn(len(c.gangs))
	for _, g := range c.gangs {
		if i == 0 {
			return g
		}
		i--
	}
	return nil
}

func (c *chaos) createMember(g *chaosGang) {
	name := fmt.Sprintf("%s-%d", g.name, g.next)
	g.next++
	if _, err := testenv.CreatePod(c.w.ctx, c.w.cp.Client, testenv.PodSpec{Namespace: c.w.ns, Name: name, Group: g.name, GPUs: 1, Apart: true}); err == nil {
		g.members = append(g.members, name)
	}
}

func (c *chaos) createPodGroup(g *chaosGang, size int) {
	_, _ = c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Create(c.w.ctx, testenv.NewPodGroup(c.w.ns, g.name, int32(size), domainKey, 20), metav1.CreateOptions{})
}

func (c *chaos) newGang() {
	c.seq++
	g := &chaosGang{name: fmt.Sprintf("g%03d", c.seq)}
	c.gangs[g.name] = g
	size := 2 + c.rng.Intn(2)
	memberFirst := c.rng.Intn(2) == 0
	if !memberFirst {
		c.createPodGroup(g, size)
	}
	for i := 0; i < size; i++ {
		c.createMember(g)
	}
	if memberFirst {
		c.createPodGroup(g, size)
	}
	c.count("new_gang")
}

// deletePod deletes a pod gracefully: a bound pod stays Terminating on its node until the
// fake kubelet finishes it.
func (c *chaos) deletePod(name string) {
	_ = c.w.cp.Client.CoreV1().Pods(c.w.ns).Delete(c.w.ctx, name, metav1.DeleteOptions{})
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
// bound; one may wait at Permit) and creates a replacement. Deleting a member of a bound gang
// leaves it partially bound by the user's hand, and the scheduler keeps it in its domain until
// room frees there, which the partial-binding invariant would misreport.
func (c *chaos) replaceMember() {
	g := c.pick()
	if g == nil || len(g.members) == 0 || c.hasBound(g) {
		return
	}
	i := c.rng.Intn(len(g.members))
	c.deletePod(g.members[i])
	g.members = append(g.members[:i], g.members[i+1:]...)
	c.createMember(g)
	c.count("replace_member")
}

// replaceBoundMember deletes one member of a fully bound gang gracefully and creates its
// replacement at once, as a controller would. The gang is partly bound until the Terminating
// member is gone and the replacement binds in the gang's domain; the chaos leaves the gang's
// nodes alone meanwhile (a user who removes the capacity a gang waits for keeps it partial, by
// design).
func (c *chaos) replaceBoundMember() {
	g := c.pick()
	if g == nil {
		return
	}
	nodes, all := c.boundNodes(g)
	if !all {
		return
	}
	c.protect(g, nodes)
	if c.repairs == nil {
		c.repairs = map[string]time.Time{}
	}
	c.repairs[g.name] = time.Now()
	i := c.rng.Intn(len(g.members))
	c.deletePod(g.members[i])
	g.members = append(g.members[:i], g.members[i+1:]...)
	c.createMember(g)
	c.count("replace_bound_member")
}

// restartGang deletes every member of a fully bound gang gracefully and creates the same
// number of replacements while the old members are still Terminating (a whole-gang restart).
func (c *chaos) restartGang() {
	g := c.pick()
	if g == nil {
		return
	}
	if _, all := c.boundNodes(g); !all {
		return
	}
	n := len(g.members)
	for _, m := range g.members {
		c.deletePod(m)
	}
	g.members = nil
	for i := 0; i < n; i++ {
		c.createMember(g)
	}
	c.count("restart_gang")
}

// protect keeps the chaos away from the nodes of a gang being repaired.
func (c *chaos) protect(g *chaosGang, nodes []string) {
	if c.protected == nil {
		c.protected = map[string]string{}
	}
	for _, n := range nodes {
		c.protected[n] = g.name
	}
}

// unprotect releases the nodes of gangs that are whole again or gone.
func (c *chaos) unprotect() {
	for n, name := range c.protected {
		g := c.gangs[name]
		if g == nil {
			delete(c.protected, n)
			continue
		}
		if _, all := c.boundNodes(g); all {
			delete(c.protected, n)
		}
	}
}

// finishGang deletes a whole gang (pods and PodGroup), freeing its capacity.
func (c *chaos) finishGang() {
	g := c.pick()
	if g == nil {
		return
	}
	for _, m := range g.members {
		c.deletePod(m)
	}
	_ = c.w.cp.PodGroups.SchedulingV1alpha1().PodGroups(c.w.ns).Delete(c.w.ctx, g.name, metav1.DeleteOptions{})
	delete(c.gangs, g.name)
	c.count("finish_gang")
}

// freeNode returns a random node without bound or Terminating pods, outside the gangs being
// repaired. With spare, the node's whole domain must be unused too (no pod of the namespace
// bound, Terminating or nominated there): relabelling or re-creating a node under a gang that
// is binding races the bind itself, which no scheduler can win (the API server accepts the
// relabel while the bind is in flight).
func (c *chaos) freeNode(spare bool) *v1.Node {
	nodes, err := c.w.cp.Client.CoreV1().Nodes().List(c.w.ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		return nil
	}
	pods, err := c.w.cp.Client.CoreV1().Pods(c.w.ns).List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	c.unprotect()
	domainOf := map[string]string{}
	for _, n := range nodes.Items {
		domainOf[n.Name] = n.Labels[domainKey]
	}
	used, usedDomains := map[string]bool{}, map[string]bool{}
	for _, p := range pods.Items {
		for _, n := range []string{p.Spec.NodeName, p.Status.NominatedNodeName} {
			if n != "" {
				used[n] = true
				usedDomains[domainOf[n]] = true
			}
		}
	}
	for n := range c.protected {
		used[n] = true
	}
	var free []v1.Node
	for _, n := range nodes.Items {
		if !used[n.Name] && !(spare && usedDomains[n.Labels[domainKey]]) {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		return nil
	}
	n := free[c.rng.Intn(len(free))]
	return &n
}

// invariants fails the test on any violation, except the partial binding of a gang whose
// bound member was replaced less than repairGrace ago (it is partial by the user's hand until
// the Terminating member is gone and the replacement binds).
func (c *chaos) invariants() {
	c.w.t.Helper()
	v, err := testenv.Violations(c.w.ctx, c.w.cp.Client, c.w.cp.PodGroups, domainKey, 90*time.Second, c.w.ns)
	if err != nil {
		c.w.t.Fatalf("check invariants: %v", err)
	}
	var real []string
	for _, line := range v {
		if !c.repairing(line) {
			real = append(real, line)
		}
	}
	if len(real) > 0 {
		c.w.t.Fatalf("invariant violations:\n%s", strings.Join(real, "\n"))
	}
}

// repairGrace is how long a gang whose bound member was replaced may stay partially bound.
const repairGrace = 60 * time.Second

// repairing reports whether a violation is the partial binding of a gang under repair.
func (c *chaos) repairing(violation string) bool {
	for name, since := range c.repairs {
		if time.Since(since) < repairGrace && strings.HasPrefix(violation, "gang "+c.w.ns+"/"+name+" partially bound") {
			return true
		}
	}
	return false
}

func (c *chaos) cordonFreeNode() {
	if n := c.freeNode(false); n != nil {
		n.Spec.Unschedulable = true
		if _, err := c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{}); err == nil {
			c.count("cordon")
		}
	}
}

func (c *chaos) uncordonAll() {
	nodes, err := c.w.cp.Client.CoreV1().Nodes().List(c.w.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; n.Spec.Unschedulable {
			n.Spec.Unschedulable = false
			_, _ = c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{})
		}
	}
	c.count("uncordon_all")
}

// relabelFreeNode moves a free node to another domain.
func (c *chaos) relabelFreeNode() {
	if n := c.freeNode(true); n != nil {
		old := n.Labels[domainKey]
		n.Labels[domainKey] = fmt.Sprintf("d%02d", c.rng.Intn(10))
		if _, err := c.w.cp.Client.CoreV1().Nodes().Update(c.w.ctx, n, metav1.UpdateOptions{}); err == nil {
			c.count("relabel")
			c.w.t.Logf("%s relabel %s: %s -> %s", time.Now().Format("15:04:05.000"), n.Name, old, n.Labels[domainKey])
		}
	}
}

// recreateFreeNode deletes a free node and creates it again.
func (c *chaos) recreateFreeNode() {
	n := c.freeNode(true)
	if n == nil {
		return
	}
	if err := c.w.cp.Client.CoreV1().Nodes().Delete(c.w.ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		return
	}
	_ = wait.PollUntilContextTimeout(c.w.ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := testenv.CreateNode(ctx, c.w.cp.Client, testenv.NodeSpec{Name: n.Name, GPUs: 1, Labels: map[string]string{domainKey: n.Labels[domainKey]}})
		return err == nil, nil
	})
	c.count("recreate_node")
}

// recreatePodGroup deletes and re-creates the PodGroup of a gang with no bound member.
func (c *chaos) recreatePodGroup() {
	g := c.pick()
	if g == nil {
		return
	}
	if c.hasBound(g) {
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
