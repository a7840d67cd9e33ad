package ledger

import (
	"context"
	"slices"
	"testing"
)

// A standby records nominated gangs with what their PodGroup said at the latest nomination;
// the first PreFilter takes them once, and an active ledger records nothing.
func TestNominees(t *testing.T) {
	l := New(context.Background(), nil, nil, nil, Options{})
	seenA := NominationSeen{UID: "u", TopologyKey: "k", MinMember: 4}
	seenB := NominationSeen{UID: "u", TopologyKey: "k2", MinMember: 4}
	l.Nominee("ns/a", "p1", seenA, true)
	l.Nominee("ns/a", "p2", seenB, false) // the same nomination seen again: the first reading stays
	l.Nominee("ns/b", "p3", NominationSeen{}, true)
	l.Nominee("ns/c", "p4", seenA, true)
	l.NotNominee("ns/c", "p4") // bound or deleted: the gang has no nominee left
	l.NotNominee("ns/x", "p9") // unknown: nothing happens
	if got := l.TakeNominated(); got != nil {
		t.Fatalf("TakeNominated before the first PreFilter = %v, want nothing", got)
	}
	l.Nominee("ns/a", "p2", seenB, true) // nominated anew: the PodGroup as it is now
	if !l.RecordsNominations() {
		t.Fatal("a standby stopped recording")
	}
	l.StartCycle()
	if l.RecordsNominations() {
		t.Fatal("an active ledger still records")
	}
	l.Nominee("ns/d", "p5", seenA, true) // the active replica's own nomination
	want := []Nominated{{Key: "ns/a", Seen: seenB}, {Key: "ns/b"}}
	if got := l.TakeNominated(); !slices.Equal(got, want) {
		t.Fatalf("TakeNominated = %v, want %v", got, want)
	}
	if got := l.TakeNominated(); got != nil {
		t.Fatalf("second TakeNominated = %v, want nothing", got)
	}
}
