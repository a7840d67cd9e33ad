// Package pace keeps the scheduling loop from running further ahead of the API than the API
// drains: it counts the pods whose binding waits on the API client (binds in flight) and
// makes the next scheduling cycle that would start new work wait while they exceed what the
// binds of the last second drained in one window.
//
// kube-scheduler schedules a pod, assumes it and binds it in a goroutine of its own. When the
// scheduling cycles are fast (OMEGangPack narrows a gang to its domain) and the API is the
// bottleneck, the binding goroutines pile up, each holding its stack, the assumed pod copy,
// its cycle state and an HTTP/2 request, and the process's memory grows with the pile while
// nothing binds sooner. The pacer bounds the pile by Little's law: the limit is
// max(Floor, min(rate × window, QPS × window)), rate being the binds completed per second
// over the last second and QPS the API client's sustained rate. Floor wins over the QPS
// ceiling: with the chart's qps 200 and a 1 s window the limit is a constant 256.
//
// What counts is the time a pod waits on the API client, nothing else. Between its Reserve
// and the end of its binding kube-scheduler sends at most two requests for it: the
// nominatedNodeName PATCH (NominatedNodeNameForExpectation, sent in the binding goroutine
// before WaitOnPermit when the pod waits at Permit or a PreBind pre-flight has work) and the
// Binding (Bind). PreBind in between waits on other controllers (VolumeBinding polls for the
// PV controller and the provisioner for up to bindTimeoutSeconds, DRA for the allocation),
// which bind at their own pace, so a pod there does not count: hundreds of pods waiting for
// volumes must not hold back the scheduling of everything else while the API server idles.
//
// The plugin tells the pacer where each pod is. Permit is the last extension point it sees
// before PreBind: OMEGangPack's own PreBind would not do, since kube-scheduler skips a
// PreBind whose pre-flight says Skip, and a pre-flight saying Success makes it send the PATCH
// for every pod. So a pod counts from Reserve until Permit decides, and then:
//   - waiting at Permit: it counts until the informer shows its PATCH (patching), then not
//     (parked);
//   - admitted at Permit: it counts until the informer shows its PATCH (nominating) if one may
//     come, then not (preparing: in PreBind, or on its way to Bind); with no PATCH to come
//     (the gate off, or the pod already nominated to the node) it stops counting at once;
//   - in Bind it counts again (binding), until PostBind or Unreserve.
//
// A pod admitted without PreBind work gets no PATCH and stays counted (nominating) on its
// way to Bind, which takes microseconds.
package pace

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

const (
	// Floor is the fewest binds the pacer lets be in flight. The limit rate × window has a
	// fixed point where a pod's time in flight equals the window: when the API server is slow
	// for reasons of its own (other clients), a small limit would throttle the scheduler to
	// limit ÷ latency. 256 pods in flight cost about 15 MB and still bind 128 pods/s at a
	// 2-second latency. Floor also wins over the QPS ceiling, for the same reason: at a
	// latency above the window a client sending QPS requests per second has more than
	// QPS × window of them on the server, so a limit of QPS × window would keep it below QPS.
	Floor = 256
	// buckets × bucketSpan is the span over which the drain rate is measured.
	buckets    = 10
	bucketSpan = 100 * time.Millisecond
	// MaxWaitWindows bounds one wait, in windows: binds that do not finish (an API server
	// that stopped answering) must not stop scheduling for good.
	MaxWaitWindows = 4
)

// Pacer counts binds in flight and measures how fast they finish. A nil *Pacer is off
// (every method is a no-op, Wait returns at once). The package comment says what counts.
type Pacer struct {
	window time.Duration
	ceil   int // QPS × window: the most the drain rate raises the limit to; 0 = no ceiling
	clock  clock.Clock

	mu      sync.Mutex
	pods    map[types.UID]phase
	counted int
	observe func(int) // called with the count whenever it changes, under mu (Observe)
	// done counts the binds finished in each bucketSpan slot of the last second; slot is the
	// bucket index (time / bucketSpan) of done[slot % buckets].
	done     [buckets]int
	slot     int64
	released chan struct{} // closed when a counted pod stops counting (uncount); replaced after
}

// phase is where a known pod is between its Reserve and the end of its binding.
type phase uint8

const (
	assumed    phase = iota // reserved, Permit not decided: counted
	patching                // waiting at Permit, its nominatedNodeName PATCH not seen yet: counted
	parked                  // waiting at Permit on its siblings only, or admitted after waiting: not counted
	nominating              // admitted at Permit, a nominatedNodeName PATCH may be pending: counted
	preparing               // admitted, no request pending before Bind (PreBind): not counted
	binding                 // in Bind: counted
)

func (ph phase) counts() bool { return ph != parked && ph != preparing }

// New returns a pacer for a window; nil (off) when window ≤ 0. qps is the API client's
// sustained rate (≤ 0: unknown, no ceiling).
func New(window time.Duration, qps float32, c clock.Clock) *Pacer {
	if window <= 0 {
		return nil
	}
	p := &Pacer{window: window, clock: c, pods: map[types.UID]phase{}, released: make(chan struct{})}
	if qps > 0 {
		p.ceil = max(1, int(float64(qps)*window.Seconds()))
	}
	return p
}

// Observe makes the pacer call f with the count of binds in flight whenever it changes,
// under the pacer's lock, so that two changes reach f in their order (a gauge set from two
// binding goroutines otherwise can keep the older value).
func (p *Pacer) Observe(f func(inFlight int)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.observe = f
	if f != nil {
		f(p.counted)
	}
}

// Assumed records a pod's Reserve. It returns the pods counted now (all methods do).
func (p *Pacer) Assumed(uid types.UID) int { return p.move(uid, assumed, false, assumed) }

// Waiting records that a pod waits at Permit; patches: kube-scheduler's nominatedNodeName
// PATCH for it may show in the informer, and it counts until Nominated.
func (p *Pacer) Waiting(uid types.UID, patches bool) int {
	if patches {
		return p.move(uid, patching, true, assumed)
	}
	return p.move(uid, parked, true, assumed)
}

// Admitted records that Permit let a pod through without waiting; patches as for Waiting
// (kube-scheduler sends the PATCH only when a PreBind pre-flight has work).
func (p *Pacer) Admitted(uid types.UID, patches bool) int {
	if patches {
		return p.move(uid, nominating, true, assumed)
	}
	return p.move(uid, preparing, true, assumed)
}

// Nominated records that the informer saw the pod's nominatedNodeName: a patching pod now
// waits on its siblings only, a nominating one is in PreBind.
func (p *Pacer) Nominated(uid types.UID) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.pods[uid] {
	case patching:
		p.set(uid, parked)
	case nominating:
		p.set(uid, preparing)
	}
	return p.counted
}

// Started records a pod entering its binding (Bind).
func (p *Pacer) Started(uid types.UID) int { return p.move(uid, binding, false, 0) }

// Finished records the end of a pod's binding: bound (PostBind) or not (Unreserve). A pod
// the pacer does not know is ignored.
func (p *Pacer) Finished(uid types.UID, bound bool) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ph, ok := p.pods[uid]
	if !ok {
		return p.counted
	}
	delete(p.pods, uid)
	if ph.counts() {
		p.uncount()
	}
	if bound {
		p.advance()
		p.done[p.slot%buckets]++
	}
	return p.counted
}

// move sets a pod's phase; known: only a pod the pacer already knows moves, and only from
// phase from.
func (p *Pacer) move(uid types.UID, to phase, known bool, from phase) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.pods[uid]; !known || ok && cur == from {
		p.set(uid, to)
	}
	return p.counted
}

// set moves uid to phase to, keeping the count. mu held.
func (p *Pacer) set(uid types.UID, to phase) {
	from, ok := p.pods[uid]
	p.pods[uid] = to
	switch {
	case (!ok || !from.counts()) && to.counts():
		p.counted++
		p.observed()
	case ok && from.counts() && !to.counts():
		p.uncount()
	}
}

// observed hands the count to the observer. mu held.
func (p *Pacer) observed() {
	if p.observe != nil {
		p.observe(p.counted)
	}
}

// uncount takes one pod off the count and wakes the waiters. mu held.
func (p *Pacer) uncount() {
	p.counted--
	p.observed()
	close(p.released)
	p.released = make(chan struct{})
}

// advance moves the rate buckets to the current slot, clearing the slots passed. mu held.
func (p *Pacer) advance() {
	now := p.clock.Now().UnixNano() / int64(bucketSpan)
	if now <= p.slot {
		return
	}
	for s := p.slot + 1; s <= now && s <= p.slot+buckets; s++ {
		p.done[s%buckets] = 0
	}
	p.slot = now
}

// State is what the pacer knows at one moment.
type State struct {
	InFlight int     // binds in flight
	Limit    int     // the most it lets be in flight now: max(Floor, min(Rate × window, QPS × window))
	Rate     float64 // binds finished per second over the last second
}

// State returns the binds in flight, the limit and the measured rate.
func (p *Pacer) State() State {
	if p == nil {
		return State{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state()
}

func (p *Pacer) state() State {
	p.advance()
	sum := 0
	for _, n := range p.done {
		sum += n
	}
	rate := float64(sum) / (buckets * bucketSpan).Seconds()
	drained := int(rate * p.window.Seconds())
	if p.ceil > 0 {
		drained = min(drained, p.ceil)
	}
	limit := max(Floor, drained)
	return State{InFlight: p.counted, Limit: limit, Rate: rate}
}

// Wait blocks while the binds in flight are at or above the limit, until one finishes below
// it, ctx ends or MaxWaitWindows windows passed. It returns how long it waited (0 when it
// did not) and the state it saw first.
func (p *Pacer) Wait(ctx context.Context) (time.Duration, State) {
	if p == nil {
		return 0, State{}
	}
	first, released := p.snapshot()
	if first.InFlight < first.Limit {
		return 0, first
	}
	start := p.clock.Now()
	timeout := p.clock.NewTimer(MaxWaitWindows * p.window)
	defer timeout.Stop()
	for {
		select {
		case <-released:
		case <-timeout.C():
			return p.clock.Since(start), first
		case <-ctx.Done():
			return p.clock.Since(start), first
		}
		var st State
		if st, released = p.snapshot(); st.InFlight < st.Limit {
			return p.clock.Since(start), first
		}
	}
}

// snapshot returns the state and the channel the next uncount closes.
func (p *Pacer) snapshot() (State, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state(), p.released
}
