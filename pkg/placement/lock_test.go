package placement_test

import (
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// TestChooseCallbacksRunWithoutTheLock: Filter reads reservations (ReservedOn) on every node in
// parallel, so Choose must not hold the store's lock while it runs the planner's callbacks (a
// max-flow for the reservation, a soft-spread ranking). A callback that waits for a concurrent
// ReservedOn finishes; with the lock held it would wait forever.
func TestChooseCallbacksRunWithoutTheLock(t *testing.T) {
	s := placement.NewStore()
	mustChoose(t, s, "ns/other", clique, 1, map[string]int{"z": 1}, "z") // a forming pin, so ReservedOn looks
	blocked := func() bool {
		done := make(chan struct{})
		go func() {
			s.ReservedOn("z-0", "")
			close(done)
		}()
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Second):
			return true
		}
	}
	var rankBlocked, reserveBlocked bool
	reserve := spread(clique, 2)
	res := s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 2,
		Rooms: map[string]int{"a": 2, "b": 2}, Capacity: roomy(),
		Rank: func(string) int {
			rankBlocked = rankBlocked || blocked()
			return 0
		},
		Reserve: func(d string) placement.Reservation {
			reserveBlocked = blocked()
			return reserve(d)
		}})
	if rankBlocked || reserveBlocked {
		t.Fatalf("ReservedOn waited on Choose's callbacks (rank %v, reserve %v)", rankBlocked, reserveBlocked)
	}
	if !res.OK || res.Commitment.Domain != "a" {
		t.Fatalf("Choose = %+v; want a new pin on a", res)
	}
}

// TestChooseSeesAPinMadeMeanwhile: a pin made by another cycle while Choose ran its callbacks
// is found under the lock and returned as the existing pin.
func TestChooseSeesAPinMadeMeanwhile(t *testing.T) {
	s := placement.NewStore()
	reserve := spread(clique, 1)
	meanwhile := make(chan placement.ChooseResult, 1)
	got := make(chan placement.ChooseResult, 1)
	go func() {
		got <- s.Choose(placement.ChooseRequest{Gang: "ns/g", Owner: "u", Key: clique, Need: 1,
			Rooms: map[string]int{"a": 1, "b": 1}, Capacity: roomy(),
			Reserve: func(d string) placement.Reservation {
				meanwhile <- choose(s, "ns/g", "uid-ns/g", clique, 1, map[string]int{"b": 1})
				return reserve(d)
			}})
	}()
	var res placement.ChooseResult
	select {
	case res = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("Choose did not return: its callback's own Choose waits on the lock")
	}
	if m := <-meanwhile; !m.OK || m.Commitment.Domain != "b" {
		t.Fatalf("the pin made meanwhile = %+v; want a new pin on b", m)
	}
	if !res.Existing || res.Commitment.Domain != "b" {
		t.Fatalf("Choose = %+v; want the existing pin on b", res)
	}
}
