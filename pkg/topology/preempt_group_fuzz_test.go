package topology

import (
	"fmt"
	"slices"
	"testing"
)

// FuzzGroupPreemption checks GroupPreemptionCandidates on small instances: every victim is
// of lower priority; the group fits its domain once the victims are gone; no single victim
// could be spared (the reprieve leaves a minimal set); and a group domain is a candidate
// exactly when evicting every lower-priority unit there would let the group fit.
func FuzzGroupPreemption(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 4, 0, 0, 0, 7, 0, 4, 255, 0, 0, 0, 7, 0, 4, 255})
	f.Add([]byte{1, 1, 3, 2, 2, 0, 2, 2, 1, 1, 0, 1, 1, 0, 1, 2, 0, 1, 2, 2, 3, 0, 1, 1, 2, 1, 4, 1, 1, 1, 5, 3, 4})
	f.Add([]byte{0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 2, 2, 2, 2, 9, 9, 9, 3, 1, 0, 1, 2, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		partners, nodes := decodeGroupInstance(data)
		units := decodeGroupUnits(data, nodes)
		const prio = 2
		cands := GroupPreemptionCandidates(partners, prio, nodes, units)
		byDomain := map[string]PreemptionCandidate{}
		for _, c := range cands {
			byDomain[c.Domain] = c
		}
		for _, d := range []string{"x", "y"} {
			gd := &groupDomain{partners: partners, domain: d}
			for _, n := range nodes {
				if n.Group == d {
					gd.nodes = append(gd.nodes, n)
				}
			}
			if len(gd.nodes) == 0 {
				continue
			}
			var eligible []int
			for i := range units {
				if units[i].Priority < prio && gd.touches(&units[i]) {
					eligible = append(eligible, i)
				}
			}
			all := fitsWith(gd, units, eligible)
			c, ok := byDomain[d]
			if ok != all {
				t.Fatalf("domain %s: candidate %v, but evicting every eligible unit fits = %v\nunits=%+v", d, ok, all, units)
			}
			if !ok {
				continue
			}
			for _, v := range c.Victims {
				if units[v].Priority >= prio {
					t.Fatalf("domain %s: victim %d has priority %d", d, v, units[v].Priority)
				}
			}
			if !fitsWith(gd, units, c.Victims) {
				t.Fatalf("domain %s: the group does not fit once victims %v are gone", d, c.Victims)
			}
			for _, v := range c.Victims {
				rest := slices.DeleteFunc(slices.Clone(c.Victims), func(x int) bool { return x == v })
				if fitsWith(gd, units, rest) {
					t.Fatalf("domain %s: victim %d could be spared (victims %v)", d, v, c.Victims)
				}
			}
		}
	})
}

// fitsWith reports whether the group fits gd's domain once the given units are evicted.
func fitsWith(gd *groupDomain, units []VictimUnit, evicted []int) bool {
	gd.freed = map[string]NodeFree{}
	for _, i := range evicted {
		gd.apply(&units[i], +1)
	}
	p := gd.plan()
	return p != nil && p.Feasible
}

// decodeGroupUnits reads up to four victim units (priority 0..3, one or two pods on nodes of
// the instance) from the input read backwards.
func decodeGroupUnits(data []byte, nodes []GroupNode) []VictimUnit {
	rev := slices.Clone(data)
	slices.Reverse(rev)
	s := &byteSource{b: rev}
	units := make([]VictimUnit, s.next()%5)
	for i := range units {
		u := VictimUnit{Name: fmt.Sprintf("u%d", i), Priority: int32(s.next() % 4), Frees: map[string]NodeFree{}}
		for k := 0; k < 1+s.next()%2; k++ {
			n := nodes[s.next()%len(nodes)].Name
			f := u.Frees[n]
			if f.Resources == nil {
				f.Resources = Resources{}
			}
			f.Resources["gpu"] += int64(1 + s.next()%3)
			f.Pods++
			u.Frees[n] = f
			u.Pods++
		}
		units[i] = u
	}
	return units
}
