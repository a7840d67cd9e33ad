package placement_test

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

func TestFailedDomains(t *testing.T) {
	f := placement.NewFailedDomains()
	g1 := placement.GangOwner{Gang: "ns/g", Owner: "u1"}
	g2 := placement.GangOwner{Gang: "ns/g", Owner: "u2"}
	h := placement.GangOwner{Gang: "ns/h", Owner: "u1"}
	ca := placement.DomainRef{Key: clique, Value: "a"}
	cb := placement.DomainRef{Key: clique, Value: "b"}
	ra := placement.DomainRef{Key: rack, Value: "a"}

	if f.Has(g1, ca) || len(f.Values(g1, clique)) != 0 || len(f.Gangs()) != 0 {
		t.Fatal("new memory not empty")
	}
	if !f.Add(g1, ca) {
		t.Fatal("first Add not new")
	}
	if f.Add(g1, ca) {
		t.Fatal("second Add reported new")
	}
	if !f.Add(g1, cb) || !f.Add(g1, ra) || !f.Add(g2, ca) || !f.Add(h, cb) {
		t.Fatal("distinct Adds not new")
	}
	if !f.Has(g1, ca) || !f.Has(g1, ra) || f.Has(h, ca) || f.Has(placement.GangOwner{Gang: "ns/g"}, ca) {
		t.Fatal("Has wrong")
	}
	set := func(vs ...string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, v := range vs {
			m[v] = struct{}{}
		}
		return m
	}
	if got := f.Values(g1, clique); !reflect.DeepEqual(got, set("a", "b")) {
		t.Fatalf("Values(g1, clique) = %v", got)
	}
	if got := f.Values(g1, rack); !reflect.DeepEqual(got, set("a")) {
		t.Fatalf("Values(g1, rack) = %v", got)
	}
	if got := f.Values(g1, "none"); len(got) != 0 {
		t.Fatalf("Values(g1, none) = %v", got)
	}
	// Values returns a fresh map.
	f.Values(g1, clique)["zzz"] = struct{}{}
	if f.Has(g1, placement.DomainRef{Key: clique, Value: "zzz"}) {
		t.Fatal("Values aliases the memory")
	}
	gangs := f.Gangs()
	sort.Strings(gangs)
	if !reflect.DeepEqual(gangs, []string{"ns/g", "ns/h"}) {
		t.Fatalf("Gangs = %v", gangs)
	}

	f.Clear(g1)
	if f.Has(g1, ca) || len(f.Values(g1, clique)) != 0 {
		t.Fatal("Clear(g1) left domains")
	}
	if !f.Has(g2, ca) || !f.Has(h, cb) {
		t.Fatal("Clear(g1) touched other owners")
	}
	if !f.Add(g1, ca) {
		t.Fatal("Add after Clear not new")
	}
	f.Clear(placement.GangOwner{Gang: "ns/none"}) // no-op

	f.ClearGang("ns/g")
	if f.Has(g1, ca) || f.Has(g2, ca) {
		t.Fatal("ClearGang left an owner's domains")
	}
	if !f.Has(h, cb) {
		t.Fatal("ClearGang touched another gang")
	}
	if got := f.Gangs(); !reflect.DeepEqual(got, []string{"ns/h"}) {
		t.Fatalf("Gangs after ClearGang = %v", got)
	}
	f.ClearGang("ns/none") // no-op
}

func TestFailedDomainsConcurrent(t *testing.T) {
	f := placement.NewFailedDomains()
	var wg sync.WaitGroup
	var mu sync.Mutex
	newCount := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			g := placement.GangOwner{Gang: "ns/g", Owner: "u"}
			for j := 0; j < 50; j++ {
				if f.Add(g, placement.DomainRef{Key: "k", Value: fmt.Sprint(j % 10)}) {
					mu.Lock()
					newCount++
					mu.Unlock()
				}
				f.Has(g, placement.DomainRef{Key: "k", Value: "1"})
				f.Values(g, "k")
				f.Gangs()
			}
		}(i)
	}
	wg.Wait()
	if newCount != 10 {
		t.Fatalf("%d Adds reported new, want exactly 10", newCount)
	}
}
