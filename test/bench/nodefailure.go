package bench

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/test/bench/observation"
)

// Workload NodeFailure (docs/benchmarks.md, "Repair and failover"): scheduler_perf has no
// controllers and no op that fails nodes, so the load generator plays both. The workload's
// last op creates one sentinel pod in namespace node-failure whose schedulerName no
// scheduler serves; createPods waits until it is bound. Seeing it, the node-failure
// controller below fails failurePercent % of the nodes (deletes the Node objects and
// force-deletes their pods), creates a replacement for every gang member lost (same
// namespace, labels and spec, as a Job or LeaderWorkerSet controller would), waits until
// every replacement is bound or none has bound for repairQuiet, and then binds the sentinel
// itself, which ends the op. Other workloads never create the sentinel.
const (
	failureNamespace = "node-failure"
	failureScheduler = "bench-node-failure"
	failurePercent   = 5
	failureSeed      = 25
	repairQuiet      = 30 * time.Second
)

type nodeFailure struct {
	tCtx      ktesting.TContext
	pods      listersv1.PodLister
	once      sync.Once
	mu        sync.Mutex
	plan      *devenv.NodeFailure
	boundAt   map[types.UID]time.Time // first bind seen while the repair runs
	forced    map[types.UID]bool      // pods the failure force-deleted
	evictions observation.Repair      // the eviction counts only
	res       *observation.Repair
}

// registerNodeFailure adds the node-failure controller to the observer's pod informer.
func registerNodeFailure(tCtx ktesting.TContext, factory informers.SharedInformerFactory) (*nodeFailure, error) {
	nf := &nodeFailure{tCtx: tCtx, pods: factory.Core().V1().Pods().Lister(),
		boundAt: map[types.UID]time.Time{}, forced: map[types.UID]bool{}}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { nf.podSeen(obj.(*v1.Pod)) },
		UpdateFunc: func(_, obj any) { nf.podSeen(obj.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				nf.podDeleted(pod)
			}
		},
	})
	return nf, err
}

func (nf *nodeFailure) podSeen(pod *v1.Pod) {
	if pod.Namespace == failureNamespace && pod.Spec.SchedulerName == failureScheduler && pod.Spec.NodeName == "" {
		nf.once.Do(func() { go nf.run(pod.DeepCopy()) })
		return
	}
	if pod.Spec.NodeName == "" {
		return
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	if nf.plan != nil && nf.res == nil {
		if _, ok := nf.boundAt[pod.UID]; !ok {
			nf.boundAt[pod.UID] = time.Now()
		}
	}
}

func (nf *nodeFailure) podDeleted(pod *v1.Pod) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	if nf.plan == nil || nf.res != nil || nf.forced[pod.UID] || pod.Spec.NodeName == "" {
		return
	}
	switch {
	case nf.plan.Survivors[pod.UID]:
		nf.evictions.SurvivorsEvicted++
	case devenv.GangOf(pod) != "":
		nf.evictions.OtherGangsEvicted++
	default:
		nf.evictions.StandaloneEvicted++
	}
}

// result is the repair's record, nil when the workload had no node failure.
func (nf *nodeFailure) result() *observation.Repair {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	return nf.res
}

// run fails the nodes, waits for the repair and records it; binding the sentinel at the end,
// also after an error, ends the workload's last op.
func (nf *nodeFailure) run(sentinel *v1.Pod) {
	tCtx := nf.tCtx
	nodes, err := factoryNodes(tCtx)
	if err != nil {
		tCtx.Errorf("node failure: list nodes: %v", err)
		return
	}
	failed := map[string]bool{}
	defer func() { nf.bindSentinel(sentinel, nodes, failed) }()
	pods, err := nf.pods.List(labels.Everything())
	if err != nil {
		tCtx.Errorf("node failure: list pods: %v", err)
		return
	}
	plan := devenv.PlanNodeFailure(nodes, pods, domainKey, failurePercent, failureSeed)
	nf.mu.Lock()
	nf.plan = &plan
	for _, p := range plan.Deleted {
		nf.forced[p.UID] = true
	}
	nf.mu.Unlock()
	for _, n := range plan.Nodes {
		failed[n] = true
	}
	start := time.Now()
	created, uids, err := plan.Fail(tCtx, tCtx.Client())
	if err != nil {
		tCtx.Errorf("node failure: %v", err)
	}
	gaveUp := nf.waitBound(uids)
	time.Sleep(time.Second) // evictions in flight when the last replacement bound
	res := nf.record(plan, created, uids, start, gaveUp)
	tCtx.Logf("node failure: seed %d, %d of %d nodes failed, %d pods force-deleted, %d gangs hit: %d/%d replacements bound, p50 %.0f ms, p99 %.0f ms, in the survivors' domain: room %d/%d, victims %d/%d, none %d/%d; survivors evicted %d, other gang members evicted %d, standalone evicted %d, gangs split %d, gangs still waiting %d, %.1f s, gave up %v",
		res.Seed, res.NodesFailed, res.Nodes, res.PodsForceDeleted, res.GangsHit, res.Bound, res.Replacements, res.P50ms, res.P99ms,
		res.RoomInDomain, res.Room, res.VictimInDomain, res.Victims, res.NoRoomInDomain, res.NoRoom,
		res.SurvivorsEvicted, res.OtherGangsEvicted, res.StandaloneEvicted, res.GangsSplit, res.GangsWaiting, res.Seconds, res.GaveUp)
}

// bindSentinel binds the sentinel pod to a node that did not fail.
func (nf *nodeFailure) bindSentinel(sentinel *v1.Pod, nodes []*v1.Node, failed map[string]bool) {
	target := ""
	for _, n := range nodes {
		if !failed[n.Name] {
			target = n.Name
			break
		}
	}
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: sentinel.Name, Namespace: sentinel.Namespace, UID: sentinel.UID},
		Target: v1.ObjectReference{Kind: "Node", Name: target}}
	if err := nf.tCtx.Client().CoreV1().Pods(sentinel.Namespace).Bind(nf.tCtx, binding, metav1.CreateOptions{}); err != nil {
		nf.tCtx.Errorf("node failure: bind the sentinel: %v", err)
	}
}

// waitBound waits until every replacement is bound; it gives up (true) when none has bound
// for repairQuiet.
func (nf *nodeFailure) waitBound(uids []types.UID) bool {
	last, lastBound := time.Now(), -1
	for {
		nf.mu.Lock()
		bound := 0
		for _, u := range uids {
			if _, ok := nf.boundAt[u]; ok || u == "" {
				bound++
			}
		}
		nf.mu.Unlock()
		if bound == len(uids) {
			return false
		}
		if bound != lastBound {
			last, lastBound = time.Now(), bound
		}
		if time.Since(last) > repairQuiet {
			return true
		}
		select {
		case <-nf.tCtx.Done():
			return true
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (nf *nodeFailure) record(plan devenv.NodeFailure, created []time.Time, uids []types.UID, start time.Time, gaveUp bool) *observation.Repair {
	pods, _ := nf.pods.List(labels.Everything())
	nodeOf := map[types.UID]string{}
	for _, p := range pods {
		nodeOf[p.UID] = p.Spec.NodeName
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	res := nf.evictions
	res.Seed, res.Nodes, res.NodesFailed = failureSeed, len(plan.DomainOf), len(plan.Nodes)
	res.PodsForceDeleted, res.GangsHit, res.Replacements = len(plan.Deleted), len(plan.GangsHit), len(plan.Replacements)
	res.GaveUp = gaveUp
	var lat []time.Duration
	end := start
	for i, r := range plan.Replacements {
		at, ok := nf.boundAt[uids[i]]
		inDomain := ok && r.Domain != "" && plan.DomainOf[nodeOf[uids[i]]] == r.Domain
		if ok && uids[i] != "" {
			res.Bound++
			lat = append(lat, at.Sub(created[i]))
			end = maxTime(end, at)
		}
		count, in := repairCounters(&res, r.Category)
		if count != nil {
			*count++
			if inDomain {
				*in++
			}
		}
	}
	res.Seconds = end.Sub(start).Seconds()
	slices.Sort(lat)
	res.P50ms, res.P99ms, res.Maxms = ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), ms(percentile(lat, 1))
	res.GangsSplit, res.GangsWaiting = gangStates(pods, plan)
	nf.res = &res
	return nf.res
}

// repairCounters are the two counters of a category (nil for a replacement without one
// survivors' domain, counted in NoSurvivors).
func repairCounters(res *observation.Repair, category string) (count, in *int) {
	switch category {
	case devenv.RepairRoom:
		return &res.Room, &res.RoomInDomain
	case devenv.RepairVictims:
		return &res.Victims, &res.VictimInDomain
	case devenv.RepairNone:
		return &res.NoRoom, &res.NoRoomInDomain
	}
	res.NoSurvivors++
	return nil, nil
}

// gangStates counts the gangs hit that are bound across domains, and those with live members
// both bound and unbound (waiting for a replacement).
func gangStates(pods []*v1.Pod, plan devenv.NodeFailure) (split, waiting int) {
	domains := map[string]map[string]bool{}
	bound, unbound := map[string]int{}, map[string]int{}
	for _, p := range pods {
		g := devenv.GangOf(p)
		if !plan.GangsHit[g] || p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			unbound[g]++
			continue
		}
		bound[g]++
		if domains[g] == nil {
			domains[g] = map[string]bool{}
		}
		domains[g][plan.DomainOf[p.Spec.NodeName]] = true
	}
	for g := range plan.GangsHit {
		if len(domains[g]) > 1 {
			split++
		}
		if bound[g] > 0 && unbound[g] > 0 {
			waiting++
		}
	}
	return split, waiting
}

func factoryNodes(tCtx ktesting.TContext) ([]*v1.Node, error) {
	list, err := tCtx.Client().CoreV1().Nodes().List(tCtx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes := make([]*v1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return nodes, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
