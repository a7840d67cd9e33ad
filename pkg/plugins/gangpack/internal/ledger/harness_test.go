package ledger

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// fakeHandle is the part of the framework handle the ledger calls: the waiting pods and the
// activations.
type fakeHandle struct {
	fwk.Handle
	mu        sync.Mutex
	waiting   map[types.UID]*waiter
	activated []string // namespace/name of every pod activated, in order of calls
}

func (h *fakeHandle) IterateOverWaitingPods(f func(fwk.WaitingPod)) {
	h.mu.Lock()
	ws := slices.Collect(maps.Values(h.waiting))
	h.mu.Unlock()
	for _, w := range ws {
		f(w)
	}
}

func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.waiting[uid]; ok {
		return w
	}
	return nil
}

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h.activated = append(h.activated, keys...)
}

// wait registers p as a framework waiting pod, as the framework does after Permit's Wait.
func (h *fakeHandle) wait(p *v1.Pod) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &waiter{pod: p}
	h.waiting[p.UID] = w
	return w
}

// waiter is a waiting pod; verdict is "" (still waiting), "allowed" or the rejection.
type waiter struct {
	pod     *v1.Pod
	mu      sync.Mutex
	verdict string
}

func (w *waiter) GetPod() *v1.Pod             { return w.pod }
func (w *waiter) GetPendingPlugins() []string { return []string{gang.PluginName} }
func (w *waiter) Allow(string)                { w.decide("allowed") }
func (w *waiter) Reject(_ string, msg string) { w.decide(msg) }
func (w *waiter) decide(v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.verdict == "" {
		w.verdict = v
	}
}

func (w *waiter) got() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.verdict
}

// timer is one timer started through the ledger's After.
type timer struct {
	d       time.Duration
	f       func()
	stopped bool
}

// bench is a ledger over a fake handle, the given pods, a hand-moved clock, hand-fired timers
// and goroutines started only when the test runs them.
type bench struct {
	t       *testing.T
	l       *Ledger
	h       *fakeHandle
	now     time.Time
	timers  []*timer
	spawned []func()
}

func newBench(t *testing.T, pods ...*v1.Pod) *bench {
	t.Helper()
	ml, err := gang.NewMembersOf(pods)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, h: &fakeHandle{waiting: map[types.UID]*waiter{}}, now: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b.l = New(ctx, b.h, ml, nil, Options{
		Now: func() time.Time { return b.now },
		After: func(d time.Duration, f func()) func() {
			tm := &timer{d: d, f: f}
			b.timers = append(b.timers, tm)
			return func() { tm.stopped = true }
		},
		Spawn: func(f func()) { b.spawned = append(b.spawned, f) },
	})
	b.l.StartCycle()
	return b
}

// fire runs a timer's callback as its moment passes; it is no longer live.
func (tm *timer) fire() {
	tm.stopped = true
	tm.f()
}

// live returns the timers neither stopped nor fired.
func (b *bench) live() []*timer {
	var out []*timer
	for _, tm := range b.timers {
		if !tm.stopped {
			out = append(out, tm)
		}
	}
	return out
}

func member(name, gangName string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{gang.Label: gangName}}}
}

func info(name string, minMember int) gang.Info {
	return gang.Info{Key: "ns/" + name, Namespace: "ns", Name: name, UID: "uid-" + name, MinMember: minMember,
		TopologyKey: "k", Timeout: 10 * time.Minute}
}

func roomy(string) (topology.Resources, int64, bool) { return topology.Resources{"gpu": 64}, 64, true }

// pin pins the gang on domain with one member slot on each node; group "" = no placement group.
func (b *bench) pin(g gang.Info, domain, group string, nodes ...string) placement.Commitment {
	b.t.Helper()
	res := placement.Reservation{}
	for _, n := range nodes {
		res[n] = placement.Slot{Count: 1, Each: topology.Resources{"gpu": 1}}
	}
	c, out := b.l.Pin(placement.PinRequest{Gang: g.Key, Owner: g.UID, Key: "k", Domain: domain, Reserved: res,
		Capacity: roomy, Remaining: len(nodes), MinMember: g.MinMember}, g, group)
	if out != placement.Pinned {
		b.t.Fatalf("Pin(%s on %s) = %v, want pinned", g.Key, domain, out)
	}
	return c
}

// reserve passes Reserve for p on node (its slot drained) and reports whether the gang
// committed.
func (b *bench) reserve(p *v1.Pod, g gang.Info, id uint64, node string) bool {
	b.l.MemberReserved(p, node)
	return b.l.Drain(klog.Background(), g, id, node)
}

// permit runs Permit for p; a member told to wait is registered as a waiting pod.
func (b *bench) permit(p *v1.Pod, g gang.Info, id uint64) (Verdict, *waiter) {
	v := b.l.Permit(klog.Background(), p, g, id, func() bool { return true }, nil)
	if v.Outcome == Wait {
		return v, b.h.wait(p)
	}
	return v, nil
}

func (b *bench) activated(key string) bool {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	return slices.Contains(b.h.activated, key)
}
