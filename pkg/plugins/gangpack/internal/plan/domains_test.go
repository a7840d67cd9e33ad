package plan

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
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

// hookedLister is a node lister that runs during each List, after taking its listing.
type hookedLister struct {
	corelisters.NodeLister
	during func()
}

func (l *hookedLister) List(sel labels.Selector) ([]*v1.Node, error) {
	list, err := l.NodeLister.List(sel)
	if l.during != nil {
		l.during()
	}
	return list, err
}

// A node event handled while a new key is being listed is not lost: the relabel of a1 that
// the listing missed still moves it once the key is indexed.
func TestDomainIndexKeepsEventsDuringListing(t *testing.T) {
	a0, a1 := testNode("a0", "a", 1), testNode("a1", "a", 1)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*v1.Node{a0, a1} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	moved := a1.DeepCopy()
	moved.Labels[testKey] = "b"
	lister := &hookedLister{NodeLister: corelisters.NewNodeLister(indexer)}
	x := newDomainIndex(lister, func() bool { return true })
	handled := make(chan struct{})
	lister.during = func() {
		lister.during = nil
		// The informer's handler runs meanwhile: it either completes at once or waits for
		// the listing to end.
		go func() { x.update(a1, moved); close(handled) }()
		select {
		case <-handled:
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, ok := x.nodes(testKey, "b"); !ok {
		t.Fatal("the index did not answer")
	}
	<-handled
	got, _ := x.nodes(testKey, "b")
	if !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("nodes(b) after the relabel = %v, want [a1]", got)
	}
	if got, _ := x.nodes(testKey, "a"); !slices.Equal(got, []string{"a0"}) {
		t.Fatalf("nodes(a) after the relabel = %v, want [a0]", got)
	}
}
