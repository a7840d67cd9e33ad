package gangpack

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// timers replaces time.AfterFunc: it records each deadline and fires them on demand.
type timers struct {
	mu  sync.Mutex
	due []func()
	n   int
}

func (tm *timers) after(_ time.Duration, f func()) func() {
	tm.mu.Lock()
	tm.due = append(tm.due, f)
	tm.n++
	tm.mu.Unlock()
	return func() {}
}

// fire runs every recorded deadline.
func (tm *timers) fire() {
	tm.mu.Lock()
	due := tm.due
	tm.due = nil
	tm.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// holdSim drives a plugin through members planning, reserving, waiting, being rejected,
// deleted and bound, PodGroups changing size, unwinds and GC releases, in any order.
type holdSim struct {
	w      *world
	tm     *timers
	pgs    map[string]int32
	cycles map[string]*cycle // pod name → its cycle while assumed
	nodeOf map[string]string
	waits  map[string]*fakeWaiter
}

func newHoldSim(t *testing.T) *holdSim {
	var nodes []*v1.Node
	for _, d := range []string{"a", "b"} {
		for i := 0; i < 3; i++ {
			nodes = append(nodes, testNode(fmt.Sprintf("%s%d", d, i), d, 1))
		}
	}
	var pods []*v1.Pod
	for _, g := range []string{"x", "y", "z"} {
		for i := 0; i < 3; i++ {
			pods = append(pods, gangMember(fmt.Sprintf("%s-%d", g, i), g, 1))
		}
	}
	w := newWorld(t, nil, nodes, pods, podGroup("x", 2), podGroup("y", 3), podGroup("z", 2))
	s := &holdSim{w: w, tm: &timers{}, pgs: map[string]int32{"x": 2, "y": 3, "z": 2},
		cycles: map[string]*cycle{}, nodeOf: map[string]string{}, waits: map[string]*fakeWaiter{}}
	w.after = s.tm.after
	return s
}

// resnap rebuilds the snapshot with the assumed members on their nodes.
func (s *holdSim) resnap() {
	names := make([]string, 0, len(s.nodeOf))
	for n := range s.nodeOf {
		names = append(names, n)
	}
	sort.Strings(names)
	var assumedPods []*v1.Pod
	for _, name := range names {
		assumedPods = append(assumedPods, assumed(s.pod(name), s.nodeOf[name]))
	}
	s.w.resnap(assumedPods...)
}

func (s *holdSim) pod(name string) *v1.Pod {
	for _, p := range s.w.pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// schedule runs one cycle for the pod: PreFilter, then Filter, Reserve and Permit on the
// first candidate that passes Filter.
func (s *holdSim) schedule(p *v1.Pod) {
	if _, busy := s.nodeOf[p.Name]; busy || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return
	}
	s.resnap()
	c, st := s.w.preFilter(p)
	if !st.IsSuccess() || c.res == nil {
		return
	}
	for _, node := range sortedNames(c.res.NodeNames.UnsortedList()) {
		ni, err := s.w.h.snapshot.NodeInfos().Get(node)
		if err != nil || !s.w.pl.Filter(s.w.ctx, c.cs, p, ni).IsSuccess() || len(ni.GetPods()) > 0 {
			continue
		}
		if !s.w.pl.Reserve(s.w.ctx, c.cs, p, node).IsSuccess() {
			s.w.pl.Unreserve(s.w.ctx, c.cs, p, node)
			return
		}
		st, _ := s.w.pl.Permit(s.w.ctx, c.cs, p, node)
		switch {
		case st.Code() == fwk.Wait:
			s.cycles[p.Name], s.nodeOf[p.Name] = c, node
			s.waits[p.Name] = s.w.h.register(p)
		case st.IsSuccess():
			s.cycles[p.Name], s.nodeOf[p.Name] = c, node
			s.bind(p.Name)
		default:
			s.w.pl.Unreserve(s.w.ctx, c.cs, p, node)
		}
		return
	}
	s.w.pl.PostFilter(s.w.ctx, c.cs, p, nil)
}

// settle acts on the verdicts of waiting members: allowed ones bind, rejected ones are
// unreserved (what the framework's binding goroutines do).
func (s *holdSim) settle() {
	names := make([]string, 0, len(s.waits))
	for name := range s.waits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		wt := s.waits[name]
		switch v := wt.now(); v {
		case "":
		case "allowed":
			delete(s.waits, name)
			s.bind(name)
		default:
			delete(s.waits, name)
			s.w.h.mu.Lock()
			delete(s.w.h.waiting, wt.pod.UID)
			s.w.h.mu.Unlock()
			s.w.pl.Unreserve(s.w.ctx, s.cycles[name].cs, wt.pod, s.nodeOf[name])
			delete(s.cycles, name)
			delete(s.nodeOf, name)
		}
	}
}

func (s *holdSim) bind(name string) {
	p := s.pod(name).DeepCopy()
	p.Spec.NodeName = s.nodeOf[name]
	s.w.pl.PostBind(s.w.ctx, s.cycles[name].cs, p, p.Spec.NodeName)
	s.w.updatePod(p)
	s.w.h.mu.Lock()
	delete(s.w.h.waiting, p.UID)
	s.w.h.mu.Unlock()
	delete(s.cycles, name)
	delete(s.nodeOf, name)
}

// step applies one operation chosen by op and arg.
func (s *holdSim) step(op, arg byte) {
	name := []string{"x", "y", "z"}[int(arg)%3]
	switch op % 6 {
	case 0, 1:
		s.schedule(s.w.pods[int(arg)%len(s.w.pods)])
	case 2:
		if c, ok := s.w.pl.ledger.Commitment(testNS + "/" + name); ok {
			s.w.pl.ledger.Unwind(klog.Background(), c.Gang, c.ID, gang.CauseUnreserve, false)
		}
	case 3:
		old := podGroup(name, s.pgs[name])
		s.pgs[name] = int32(1 + int(arg/3)%3)
		cur := podGroup(name, s.pgs[name])
		_ = s.w.pgs.Update(cur)
		s.w.pl.ledger.OnPodGroupChange(old, cur)
	case 4:
		p := s.w.pods[int(arg)%len(s.w.pods)]
		if _, waiting := s.waits[p.Name]; !waiting {
			s.w.updatePod(terminating(p))
		}
	case 5:
		s.w.pl.ledger.Unwind(klog.Background(), testNS+"/"+name, placement.AnyID, gang.CauseGC, false)
	}
	s.settle()
}

// FuzzHoldsHaveDeadlines checks that no sequence of events leaves a hold without a deadline:
// every forming commitment got an expiry when it was created, and once every deadline has
// passed no gang holds anything.
func FuzzHoldsHaveDeadlines(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 3, 0, 4})
	f.Add([]byte{0, 3, 3, 7, 0, 4, 2, 0, 0, 1, 5, 2})
	f.Add([]byte{0, 0, 4, 0, 1, 1, 0, 2, 3, 5, 0, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		s := newHoldSim(t)
		created := 0
		for i := 0; i+1 < len(ops); i += 2 {
			before := s.w.pl.ledger.Pins()
			s.step(ops[i], ops[i+1])
			created += newForming(before, s.w.pl.ledger.Pins())
			if s.tm.n < created {
				t.Fatalf("after op %d: %d forming commitments were created but only %d deadlines set", i/2, created, s.tm.n)
			}
		}
		for round := 0; round < 3; round++ { // expiries may reject waiters that re-plan
			s.tm.fire()
			s.settle()
		}
		s.tm.fire()
		for _, c := range s.w.pl.ledger.Pins() {
			if c.Forming() {
				t.Fatalf("gang %s still holds domain %s after every deadline passed", c.Gang, c.Domain)
			}
		}
	})
}

// newForming counts forming commitments in after that were not in before (by attempt id).
func newForming(before, after []placement.Commitment) int {
	old := map[uint64]bool{}
	for _, c := range before {
		old[c.ID] = true
	}
	n := 0
	for _, c := range after {
		if c.Forming() && !old[c.ID] {
			n++
		}
	}
	return n
}

func sortedNames(names []string) []string {
	sort.Strings(names)
	return names
}
