package ledger

import (
	"context"
	"testing"
)

// GC forgets a group record none of whose attempts still owns its partner's pin, and a
// waiting group the caller no longer wants; it keeps the waiting groups it wants.
func TestPruneGroupsForgetsDeadRecords(t *testing.T) {
	l := New(context.Background(), nil, nil, nil, Options{})
	l.groups.record("ns/old", "ns/x", 41)
	l.groups.record("ns/old", "ns/y", 42)
	l.GroupWaits("ns/grp", "incomplete")
	l.GroupWaits("ns/gone", "incomplete")
	l.PruneGroups(func(group string) bool { return group == "ns/grp" })
	s := l.Stats()
	if s.GroupRecords != 0 {
		t.Errorf("%d group records kept, want the stale one forgotten", s.GroupRecords)
	}
	if len(s.WaitingGroups) != 1 || s.WaitingGroups[0] != "ns/grp" {
		t.Errorf("waiting groups %v, want [ns/grp]", s.WaitingGroups)
	}
}
