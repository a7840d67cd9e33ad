// Package pace keeps the scheduling loop from running further ahead of the API than the API
// drains: it counts the binding cycles in flight (pods assumed whose binding has not finished,
// less gang members waiting at Permit on their siblings only) and makes the next scheduling
// cycle that would start new work wait while they exceed what the binds of the last second
// drained in one window.
//
// kube-scheduler schedules a pod, assumes it and binds it in a goroutine of its own. When the
// scheduling cycles are fast (OMEGangPack narrows a gang to its domain) and the API is the
// bottleneck, the binding goroutines pile up, each holding its stack, the assumed pod copy,
// its cycle state and an HTTP/2 request, and the process's memory grows with the pile while
// nothing binds sooner. The pacer bounds the pile by Little's law: at most rate × window binds
// in flight, rate being the binds completed per second over the last second, never fewer than
// Floor and never more than the client's QPS × window.
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
	// 2-second latency.
	Floor = 256
	// buckets × bucketSpan is the span over which the drain rate is measured.
	buckets    = 10
	bucketSpan = 100 * time.Millisecond
	// MaxWaitWindows bounds one wait, in windows: binds that do not finish (an API server
	// that stopped answering) must not stop scheduling for good.
	MaxWaitWindows = 4
)

// Pacer counts binds in flight and measures how fast they finish. A nil *Pacer is off
// (every method is a no-op, Wait returns at once).
//
// A pod counts from its Reserve until its binding ends (PostBind or Unreserve), except while
// it waits at Permit on its siblings: kube-scheduler sends a waiting member's
// nominatedNodeName PATCH first (NominatedNodeNameForExpectation), so a member that waits
// counts until the informer shows that PATCH landed, and one that needs none stops counting
// when it starts to wait. It counts again when its binding starts (Bind).
type Pacer struct {
	window time.Duration
	ceil   int // the most binds in flight: QPS × window (never below Floor); 0 = no ceiling
	clock  clock.Clock

	mu      sync.Mutex
	pods    map[types.UID]phase
	counted int
	// done counts the binds finished in each bucketSpan slot of the last second; slot is the
	// bucket index (time / bucketSpan) of done[slot % buckets].
	done     [buckets]int
	slot     int64
	released chan struct{} // closed when a counted pod stops counting (uncount); replaced after
}

// phase is where a known pod is between its Reserve and the end of its binding.
type phase uint8

const (
	assumed  phase = iota // reserved, not waiting: counted
	patching              // waiting at Permit, its nominatedNodeName PATCH not seen yet: counted
	parked                // waiting at Permit on its siblings only: not counted
	binding               // in Bind: counted
)

func (ph phase) counts() bool { return ph != parked }

// New returns a pacer for a window; nil (off) when window ≤ 0. qps is the API client's
// sustained rate (≤ 0: unknown, no ceiling).
func New(window time.Duration, qps float32, c clock.Clock) *Pacer {
	if window <= 0 {
		return nil
	}
	p := &Pacer{window: window, clock: c, pods: map[types.UID]phase{}, released: make(chan struct{})}
	if qps > 0 {
		p.ceil = max(Floor, int(float64(qps)*window.Seconds()))
	}
	return p
}

// Assumed records a pod's Reserve. It returns the pods counted now (all methods do).
func (p *Pacer) Assumed(uid types.UID) int { return p.move(uid, assumed, false) }

// Waiting records that a pod waits at Permit; patches: kube-scheduler sends its
// nominatedNodeName PATCH before it waits, and it counts until Nominated.
func (p *Pacer) Waiting(uid types.UID, patches bool) int {
	if patches {
		return p.move(uid, patching, true)
	}
	return p.move(uid, parked, true)
}

// Nominated records that the informer saw the pod's nominatedNodeName: a patching pod now
// waits on its siblings only.
func (p *Pacer) Nominated(uid types.UID) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods[uid] == patching {
		p.set(uid, parked)
	}
	return p.counted
}

// Started records a pod entering its binding (Bind).
func (p *Pacer) Started(uid types.UID) int { return p.move(uid, binding, false) }

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

// move sets a pod's phase; known: only a pod the pacer already knows moves.
func (p *Pacer) move(uid types.UID, to phase, known bool) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pods[uid]; ok || !known {
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
	case ok && from.counts() && !to.counts():
		p.uncount()
	}
}

// uncount takes one pod off the count and wakes the waiters. mu held.
func (p *Pacer) uncount() {
	p.counted--
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
	Limit    int     // the most it lets be in flight now
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
	limit := max(Floor, int(rate*p.window.Seconds()))
	if p.ceil > 0 {
		limit = min(limit, p.ceil)
	}
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
