package gangpack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The domain index follows node events for the keys it was asked about: relabels move a
// node, deletions and unlabelling remove it, and it declines to answer until synced.
func TestDomainIndexFollowsNodeEvents(t *testing.T) {
	a0, a1, b0 := testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1)
	x := staticDomainIndex(t, []*v1.Node{a0, a1, b0})
	want := func(domain string, names ...string) {
		t.Helper()
		got, ok := x.nodes(testKey, domain)
		slices.Sort(got)
		if !ok || !slices.Equal(got, names) {
			t.Fatalf("nodes(%s) = %v, %v; want %v", domain, got, ok, names)
		}
	}
	want("a", "a0", "a1")
	moved := a1.DeepCopy()
	moved.Labels[testKey] = "b"
	x.update(a1, moved)
	want("a", "a0")
	want("b", "a1", "b0")
	bare := b0.DeepCopy()
	delete(bare.Labels, testKey)
	x.update(b0, bare)
	want("b", "a1")
	x.update(moved, nil)
	want("b")
	x.update(nil, testNode("c0", "c", 1))
	want("c", "c0")
	x.synced = func() bool { return false }
	if _, ok := x.nodes(testKey, "a"); ok {
		t.Fatal("an unsynced index answered")
	}
	var none *domainIndex
	if _, ok := none.nodes(testKey, "a"); ok {
		t.Fatal("a nil index answered")
	}
}
