package reliability

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The node-failure repair scenario (docs/benchmarks.md, "Repair and failover"): repairDomains
// domains of repairPerDomain one-GPU nodes, one bound gang of repairGang members (priority
// 1000) per domain, and a low-priority standalone pod (priority 10) on the spare node of half
// the domains. Each round fails 5 % of the nodes (seeded, among the nodes that run a gang
// member): the Node objects are deleted, their pods force-deleted, and a replacement created
// per lost member as the gang's controller would. The round waits until every replacement is
// bound or none has bound for repairQuiet, then the nodes come back, the gangs finish their
// repair and the standalone pods lost are created again.
const (
	repairDomains, repairPerDomain, repairGang = 20, 4, 3
	repairPercent                              = 5
	repairQuiet                                = 15 * time.Second
	gangPriority, lowPriority                  = int32(1000), int32(10)
)

// repairRounds is OME_REPAIR_ROUNDS (the long variant), else 1.
func repairRounds(t *testing.T) int { return envCount(t, "OME_REPAIR_ROUNDS", 1) }

// envCount is the positive number in the environment variable name, else def.
func envCount(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// Checks, over every round: each replacement whose survivors' domain had free room binds
// there; no survivor is evicted; no gang split, no node double-booked, every gang whole once
// the nodes are back. With OME_REPAIR_PREEMPTION=1 the replacements whose domain had room
// only once lower-priority pods are evicted must bind there too (repair preemption).
func TestNodeFailureRepair(t *testing.T) {
	rounds := repairRounds(t)
	w := newWorld(t)
	w.domains(repairDomains, repairPerDomain)
	w.scheduler("sched", devenv.Profile{Args: devenv.DefaultArgs + "\npreemption: true"})
	for g := 0; g < repairDomains; g++ {
		w.priorityGang(fmt.Sprintf("g%02d", g), repairGang, gangPriority)
	}
	w.waitBound(repairDomains*repairGang, 60*time.Second, 60*time.Second)
	w.lowPods(repairDomains / 2)
	w.waitBound(repairDomains*repairGang+repairDomains/2, 60*time.Second, 60*time.Second)
	pw := w.watchPods()
	seed := chaosSeed(t)
	t.Logf("repair seed %d (OME_CHAOS_SEED=%d replays the failures), %d rounds", seed, seed, rounds)
	st := &repairStats{n: map[string]int{}, in: map[string]int{}, latBy: map[string][]time.Duration{}}
	for r := 0; r < rounds; r++ {
		st.round(w, pw, uint64(seed)+uint64(r))
	}
	st.report(t)
}

// priorityGang creates a PodGroup and its members (1 GPU each, apart) at priority prio.
func (w *world) priorityGang(name string, size int, prio int32) {
	w.t.Helper()
	if _, err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).Create(w.ctx, devenv.NewPodGroup(w.ns, name, int32(size), domainKey, 120), metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i < size; i++ {
		p := devenv.NewPod(devenv.PodSpec{Namespace: w.ns, Name: fmt.Sprintf("%s-%d", name, i), Group: name, GPUs: 1, Apart: true})
		p.Spec.Priority = ptr.To(prio)
		if _, err := w.cp.Client.CoreV1().Pods(w.ns).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// lowPods creates n low-priority standalone one-GPU pods.
func (w *world) lowPods(n int) {
	w.t.Helper()
	for i := 0; i < n; i++ {
		p := devenv.NewPod(devenv.PodSpec{Namespace: w.ns, GPUs: 1})
		p.GenerateName, p.Spec.Priority = "low-", ptr.To(lowPriority)
		if _, err := w.cp.Client.CoreV1().Pods(w.ns).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// livePods lists the namespace's pods that are not Terminating.
func (w *world) livePods() []*v1.Pod {
	w.t.Helper()
	list, err := w.cp.Client.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*v1.Pod
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

type repairStats struct {
	rounds, failed, replacements, bound int
	lat                                 []time.Duration
	latBy                               map[string][]time.Duration // by category
	n, in                               map[string]int             // replacements and those bound in the survivors' domain, by category
	survivorsEvicted, lowEvicted        int
}

func (st *repairStats) round(w *world, pw *podWatch, seed uint64) {
	w.t.Helper()
	nodeList, err := w.cp.Client.CoreV1().Nodes().List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var nodes []*v1.Node
	for i := range nodeList.Items {
		nodes = append(nodes, &nodeList.Items[i])
	}
	before := w.livePods()
	plan := devenv.PlanNodeFailure(nodes, before, domainKey, repairPercent, seed)
	start := time.Now()
	created, uids, err := plan.Fail(w.ctx, w.cp.Client)
	if err != nil {
		w.t.Fatal(err)
	}
	// Every replacement bound, or none bound for repairQuiet; invariants every second.
	last, lastBound, lastCheck := time.Now(), -1, time.Now()
	for {
		bound := 0
		for _, u := range uids {
			if _, _, ok := pw.boundAt(u); ok {
				bound++
			}
		}
		if bound == len(uids) || time.Since(last) > repairQuiet {
			break
		}
		if bound != lastBound {
			last, lastBound = time.Now(), bound
		}
		if time.Since(lastCheck) > time.Second {
			w.invariants(0)
			lastCheck = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.invariants(0)
	st.rounds++
	st.failed += len(plan.Nodes)
	for i, r := range plan.Replacements {
		st.replacements++
		st.n[r.Category]++
		at, node, ok := pw.boundAt(uids[i])
		if !ok {
			continue
		}
		st.bound++
		st.lat = append(st.lat, at.Sub(created[i]))
		st.latBy[r.Category] = append(st.latBy[r.Category], at.Sub(created[i]))
		if r.Domain != "" && plan.DomainOf[node] == r.Domain {
			st.in[r.Category]++
		}
	}
	w.t.Logf("round %d: nodes %v failed, %d replacements (%s), %d bound so far in all", st.rounds, plan.Nodes,
		len(plan.Replacements), categories(plan), st.bound)
	forced := map[string]bool{}
	for _, p := range plan.Deleted {
		forced[string(p.UID)] = true
	}
	for _, p := range before {
		if at, ok := pw.goneAt(p.UID); ok && at.After(start) && !forced[string(p.UID)] {
			if plan.Survivors[p.UID] {
				st.survivorsEvicted++
			} else if devenv.GangOf(p) == "" {
				st.lowEvicted++
			}
		}
	}
	w.restore(plan)
}

// restore brings the failed nodes back, waits until every gang is whole, creates the
// standalone pods lost again, and waits until they are bound.
func (w *world) restore(plan devenv.NodeFailure) {
	w.t.Helper()
	for _, n := range plan.Nodes {
		if _, err := devenv.CreateNode(w.ctx, w.cp.Client, devenv.NodeSpec{Name: n, GPUs: 1,
			Labels: map[string]string{domainKey: plan.DomainOf[n]}}); err != nil {
			w.t.Fatal(err)
		}
	}
	w.waitAllBound()
	low := 0
	for _, p := range w.livePods() {
		if devenv.GangOf(p) == "" {
			low++
		}
	}
	w.lowPods(repairDomains/2 - low)
	w.waitAllBound()
	v, err := devenv.Violations(w.ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns)
	if err != nil || len(v) > 0 {
		w.t.Fatalf("after the nodes came back: %v %s", err, strings.Join(v, "\n"))
	}
}

// waitAllBound waits until every live pod of the namespace is bound, checking invariants.
func (w *world) waitAllBound() {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		w.invariants(0)
		for _, p := range w.livePods() {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var pending []string
		for _, p := range w.livePods() {
			if p.Spec.NodeName == "" {
				pending = append(pending, p.Name)
			}
		}
		w.t.Fatalf("pods still unbound after 90 s: %v", pending)
	}
}

func (st *repairStats) report(t *testing.T) {
	t.Helper()
	slices.Sort(st.lat)
	share := func(c string) string {
		if st.n[c] == 0 {
			return "-"
		}
		return fmt.Sprintf("%d/%d (%.0f %%)", st.in[c], st.n[c], 100*float64(st.in[c])/float64(st.n[c]))
	}
	t.Logf("repair: %d rounds, %d nodes failed, %d/%d replacements bound, created -> bound p50 %v, p99 %v, max %v; "+
		"in the survivors' domain: room %s, victims %s, neither %s, no survivors %d; survivors evicted %d, low-priority pods evicted %d",
		st.rounds, st.failed, st.bound, st.replacements, durationPercentile(st.lat, 0.5).Round(time.Millisecond),
		durationPercentile(st.lat, 0.99).Round(time.Millisecond), durationPercentile(st.lat, 1).Round(time.Millisecond),
		share(devenv.RepairRoom), share(devenv.RepairVictims), share(devenv.RepairNone),
		st.n[devenv.RepairNoSurvivors]+st.n[devenv.RepairSplit], st.survivorsEvicted, st.lowEvicted)
	for _, c := range slices.Sorted(maps.Keys(st.latBy)) {
		lat := st.latBy[c]
		slices.Sort(lat)
		t.Logf("repair: %s: %d bound, created -> bound p50 %v, p99 %v", c, len(lat),
			durationPercentile(lat, 0.5).Round(time.Millisecond), durationPercentile(lat, 0.99).Round(time.Millisecond))
	}
	if st.survivorsEvicted > 0 {
		t.Errorf("%d survivors evicted by the repair", st.survivorsEvicted)
	}
	if st.in[devenv.RepairRoom] != st.n[devenv.RepairRoom] {
		t.Errorf("%s replacements with free room in their survivors' domain bound there", share(devenv.RepairRoom))
	}
	if os.Getenv("OME_REPAIR_PREEMPTION") == "1" && st.in[devenv.RepairVictims] != st.n[devenv.RepairVictims] {
		t.Errorf("%s replacements with lower-priority room in their survivors' domain bound there", share(devenv.RepairVictims))
	}
	if st.replacements == 0 {
		t.Error("no replacement: the scenario repaired nothing")
	}
}

// categories lists the plan's replacements by category, e.g. "room 2, victims 1".
func categories(plan devenv.NodeFailure) string {
	n := map[string]int{}
	for _, r := range plan.Replacements {
		n[r.Category]++
	}
	var out []string
	for _, c := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s %d", c, n[c]))
	}
	return strings.Join(out, ", ")
}
