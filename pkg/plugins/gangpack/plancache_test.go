package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// cacheSim drives a world whose snapshot is kept by kube-scheduler's own cache, updated in
// place as the scheduler does between cycles, and whose domain index follows node events.
type cacheSim struct {
	t      *testing.T
	w      *world
	logger klog.Logger
	cache  schedcache.Cache
	nodes  map[string]*v1.Node
	pods   []*v1.Pod // standalone pods assumed on nodes
	next   int
	probes []*v1.Pod // gang members whose planning is compared
}

func newCacheSim(t *testing.T) *cacheSim {
	return newCacheSimWith(t, nil, func(*v1.Pod) {})
}

// newCacheSimWith is newCacheSim whose framework has dra as its DRA manager and whose gang
// members are changed by member (before the world is built).
func newCacheSimWith(t *testing.T, dra fwk.SharedDRAManager, member func(*v1.Pod)) *cacheSim {
	var nodes []*v1.Node
	for d := 0; d < 4; d++ {
		for i := 0; i < 3; i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("n%d-%d", d, i), fmt.Sprintf("d%d", d), int64(2+2*(i%2))))
		}
	}
	probes := []*v1.Pod{gangMember("p-0", "p", 2), gangMember("p-1", "p", 2), gangMember("q-0", "q", 1),
		gangMember("q-1", "q", 1), gangMember("q-2", "q", 1), gangMember("o-0", "o", 3), gangMember("o-1", "o", 3)}
	for _, p := range probes {
		member(p)
	}
	w := newWorldWith(t, dra, nil, nodes, probes, podGroup("p", 2), podGroup("q", 3), podGroup("o", 2))
	s := &cacheSim{t: t, w: w, logger: klog.FromContext(w.ctx), nodes: map[string]*v1.Node{},
		probes: []*v1.Pod{probes[0], probes[2]}}
	s.cache = inPlaceSnapshot(w, nodes)
	for _, n := range nodes {
		s.nodes[n.Name] = n
	}
	return s
}

// inPlaceSnapshot gives the world a snapshot kept by kube-scheduler's cache over nodes, as the
// scheduler keeps it (each NodeInfo updated in place), and returns the cache.
func inPlaceSnapshot(w *world, nodes []*v1.Node) schedcache.Cache {
	schedmetrics.Register() // the cache's cleanup loop reports to the scheduler's metrics
	c := schedcache.New(w.ctx, 0, nil)
	logger := klog.FromContext(w.ctx)
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	w.h.snapshot = schedcache.NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, w.h.snapshot); err != nil {
		w.t.Fatal(err)
	}
	return c
}

// sync is the scheduler's UpdateSnapshot at the start of a cycle.
func (s *cacheSim) sync() {
	if err := s.cache.UpdateSnapshot(s.logger, s.w.h.snapshot); err != nil {
		s.t.Fatal(err)
	}
}

func (s *cacheSim) nodeNames() []string {
	var out []string
	for n := range s.nodes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// step applies one event chosen by op, with arg selecting its target.
func (s *cacheSim) step(op, arg byte) {
	names := s.nodeNames()
	if len(names) == 0 {
		return
	}
	node := s.nodes[names[int(arg)%len(names)]]
	switch op % 6 {
	case 0, 1: // a standalone pod is assumed on a node
		p := st.MakePod().Namespace(testNS).Name(fmt.Sprintf("s-%d", s.next)).UID(fmt.Sprintf("s-%d", s.next)).
			Req(map[v1.ResourceName]string{testGPU: fmt.Sprint(1 + arg%2)}).Node(node.Name).Obj()
		s.next++
		if s.cache.AssumePod(s.logger, p) == nil {
			s.pods = append(s.pods, p)
		}
	case 2: // a standalone pod goes away
		if len(s.pods) > 0 {
			i := int(arg) % len(s.pods)
			if err := s.cache.ForgetPod(s.logger, s.pods[i]); err != nil {
				s.t.Fatal(err)
			}
			s.pods = slices.Delete(s.pods, i, i+1)
		}
	case 3: // a node moves to another domain; from arg 128 on, the domain index sees it and
		// the probes plan before the scheduler's cache does (separate informer listeners)
		cur := node.DeepCopy()
		cur.Labels[testKey] = fmt.Sprintf("d%d", arg%5)
		s.w.pl.planner.NodeChanged(node, cur)
		if arg >= 128 {
			for _, p := range s.probes {
				s.preFilterOnce(p, true)
			}
		}
		s.cache.UpdateNode(s.logger, node, cur)
		s.nodes[cur.Name] = cur
	case 4: // a node joins (or, when arg is odd and the node is empty, leaves)
		if arg%2 == 1 && !slices.ContainsFunc(s.pods, func(p *v1.Pod) bool { return p.Spec.NodeName == node.Name }) {
			if err := s.cache.RemoveNode(s.logger, node); err != nil {
				s.t.Fatal(err)
			}
			s.w.pl.planner.NodeChanged(node, nil)
			delete(s.nodes, node.Name)
			return
		}
		n := testNode(fmt.Sprintf("x-%d", s.next), fmt.Sprintf("d%d", arg%5), int64(2+arg%3*2))
		s.next++
		s.cache.AddNode(s.logger, n)
		s.w.pl.planner.NodeChanged(nil, n)
		s.nodes[n.Name] = n
	case 5: // another gang pins (reserves room) or lets go
		if _, ok := s.w.pl.ledger.Commitment("ns/o"); ok {
			s.w.pl.ledger.Unwind(klog.Background(), "ns/o", placement.AnyID, gang.CauseUnreserve, false)
			return
		}
		s.sync()
		_, _ = s.w.preFilter(s.w.pods[5])
	}
}

// outcome is what a PreFilter decided, for comparison.
type outcome struct {
	code     fwk.Code
	msg      string
	nodes    []string
	domain   string
	reserved placement.Reservation
}

// preFilterOnce runs the probe's PreFilter (with or without the plan cache) and releases the
// pin it made, so both runs start from the same state.
func (s *cacheSim) preFilterOnce(p *v1.Pod, cached bool) outcome {
	restore := func() {}
	if !cached {
		restore = s.w.pl.planner.WithoutPlanCache()
	}
	c, st := s.w.preFilter(p)
	restore()
	out := outcome{code: st.Code(), msg: st.Message()}
	if c.res != nil {
		out.nodes = sets.List(c.res.NodeNames)
	}
	key, _, _ := gang.Of(p)
	if pin, ok := s.w.pl.ledger.Commitment(key); ok {
		out.domain, out.reserved = pin.Domain, pin.Reserved
		s.w.pl.ledger.Unwind(klog.Background(), key, pin.ID, gang.CauseUnreserve, false)
	}
	return out
}

// check compares every probe's planning through the cache with a planning from scratch.
func (s *cacheSim) check(at int) {
	s.sync()
	for _, p := range s.probes {
		got, want := s.preFilterOnce(p, true), s.preFilterOnce(p, false)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			s.t.Fatalf("after op %d, %s through the plan cache: %+v\nplanned from scratch: %+v", at, p.Name, got, want)
		}
	}
}

// The plan cache never changes a decision: after any sequence of pods assumed and forgotten,
// nodes relabelled, added and removed, and other gangs reserving room, PreFilter through the
// cache decides exactly what a planning from scratch decides (candidates, message, domain and
// reservation), with the snapshot updated in place by kube-scheduler's own cache.
func FuzzPlanCacheMatchesScratch(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 6, 5, 0, 2, 0, 3, 2})
	f.Add([]byte{5, 0, 0, 1, 0, 2, 5, 0, 4, 9, 4, 1, 0, 4})
	f.Add([]byte{3, 1, 3, 4, 0, 0, 0, 1, 0, 2, 5, 0, 1, 7})
	f.Add([]byte{3, 154, 0, 1}) // n3-1 into the new domain d4, seen by the index first
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 48 {
			ops = ops[:48]
		}
		s := newCacheSim(t)
		s.check(-1)
		for i := 0; i+1 < len(ops); i += 2 {
			s.step(ops[i], ops[i+1])
			s.check(i / 2)
		}
	})
}

// The same property over fixed sequences, so `go test` exercises it without -fuzz.
func TestPlanCacheMatchesScratch(t *testing.T) {
	runCacheSims(t, 40, 1, func(t *testing.T) stepper { return newCacheSim(t) })
}

// stepper is a simulation of events whose planning through the plan cache is checked.
type stepper interface {
	step(op, arg byte)
	check(at int)
}

// runCacheSims runs n simulations of 20 random events each (seeded from seed·golden+salt),
// checking after each event.
func runCacheSims(t *testing.T, n int, salt uint32, sim func(*testing.T) stepper) {
	for seed := 0; seed < n; seed++ {
		ops := make([]byte, 40)
		x := uint32(seed)*2654435761 + salt
		for i := range ops {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			ops[i] = byte(x)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := sim(t)
			s.check(-1)
			for i := 0; i+1 < len(ops); i += 2 {
				s.step(ops[i], ops[i+1])
				s.check(i / 2)
			}
		})
	}
}

// A node relabelled into a new domain that the domain index sees before the snapshot does is
// planned in that domain once the snapshot catches up (its NodeInfo is in no cache entry, so
// no generation reveals the change).
func TestPlanCacheRelabelIndexedBeforeSnapshot(t *testing.T) {
	s := newCacheSim(t)
	s.check(-1)
	node := s.nodes["n3-1"] // 4 GPUs: alone, room for p's two 2-GPU members
	cur := node.DeepCopy()
	cur.Labels[testKey] = "d4"
	s.w.pl.planner.NodeChanged(node, cur)
	for _, p := range s.probes {
		s.preFilterOnce(p, true) // planned on the snapshot from before the relabel
	}
	s.cache.UpdateNode(s.logger, node, cur)
	s.nodes[cur.Name] = cur
	s.check(0)
}
