package ledger

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// AfterFunc runs f once d has passed and returns a function that stops it (time.AfterFunc;
// tests drive it by hand). Stopping a timer that already fired is a no-op.
type AfterFunc func(d time.Duration, f func()) (stop func())

func realAfter(d time.Duration, f func()) func() {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}

// timerSet keeps the live timers of one kind by key: at most one per key, each with the
// moment it fires. A timer whose key ended otherwise (stop) or was started again (start) is
// stopped and its callback never runs, so nothing a callback holds outlives what it was for,
// however long the timeout.
type timerSet[K comparable] struct {
	mu   sync.Mutex
	next uint64
	m    map[K]timerEntry
}

type timerEntry struct {
	seq  uint64
	at   time.Time
	stop func()
}

func newTimerSet[K comparable]() *timerSet[K] { return &timerSet[K]{m: map[K]timerEntry{}} }

// start runs f after d (through after) unless key is stopped or started again first; at is
// the moment the timer fires on the caller's clock (see reached).
func (t *timerSet[K]) start(key K, at time.Time, d time.Duration, after AfterFunc, f func()) {
	t.mu.Lock()
	t.next++
	seq := t.next
	old, replaced := t.m[key]
	t.m[key] = timerEntry{seq: seq, at: at, stop: func() {}}
	t.mu.Unlock()
	if replaced {
		old.stop()
	}
	stop := after(d, func() {
		if t.take(key, seq) {
			f()
		}
	})
	t.mu.Lock()
	e, ok := t.m[key]
	if ok && e.seq == seq {
		e.stop = stop
		t.m[key] = e
	}
	t.mu.Unlock()
	if !ok || e.seq != seq {
		stop() // the key ended or started again before the timer was recorded
	}
}

// take forgets key's timer if it is still timer seq, and reports whether it was.
func (t *timerSet[K]) take(key K, seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok && e.seq == seq {
		delete(t.m, key)
		return true
	}
	return false
}

// stop stops and forgets key's timer, if any, and reports whether there was one.
func (t *timerSet[K]) stop(key K) bool {
	t.mu.Lock()
	e, ok := t.m[key]
	delete(t.m, key)
	t.mu.Unlock()
	if ok {
		e.stop()
	}
	return ok
}

// stopWhere stops and forgets every timer whose key matches.
func (t *timerSet[K]) stopWhere(match func(K) bool) {
	var stops []func()
	t.mu.Lock()
	for k, e := range t.m {
		if match(k) {
			stops = append(stops, e.stop)
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	for _, s := range stops {
		s()
	}
}

// reached reports whether key has a live timer and now is at or past its moment.
func (t *timerSet[K]) reached(key K, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[key]
	return ok && !now.Before(e.at)
}

func (t *timerSet[K]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// when returns the moment key's timer fires, if one is armed.
func (t *timerSet[K]) when(key K) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[key]
	return e.at, ok
}

// WakeBlockedAfter wakes the pods refused because of a hold once d has passed: room set aside
// outside the store (standalone preemptor's protected node) is given back by then. The timer
// is the preemptor's: preempting again replaces it, and the preemptor's binding or deletion
// stops it (endProtection).
func (l *Ledger) WakeBlockedAfter(preemptor types.UID, d time.Duration) {
	l.protections.start(preemptor, l.now().Add(d), d, l.after, func() { l.wakeBlocked(l.logger) })
}

// endProtection stops the preemptor's protection timer, if one is armed, and wakes the pods
// refused meanwhile: the protection ends with the pod's binding or deletion.
func (l *Ledger) endProtection(preemptor types.UID) {
	if l.protections.stop(preemptor) {
		l.wakeBlocked(l.logger)
	}
}
