package topology

import (
	"cmp"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// hostGroup is one group domain of count nodes whose partner keys are all the node name, each
// node with gpus free GPUs, and partners one-GPU partners of need members each.
func hostGroup(count int, gpus int64, partners, need int) ([]Partner, []GroupNode) {
	parts := make([]Partner, partners)
	for p := range parts {
		parts[p] = Partner{Gang: pg(need, Resources{"gpu": 1}, false), Key: p}
	}
	nodes := make([]GroupNode, count)
	for i := range nodes {
		name := fmt.Sprintf("n%04d", i)
		subs, fits := make([]string, partners), make([][]bool, partners)
		for p := range subs {
			subs[p], fits[p] = name, yes
		}
		nodes[i] = gn(name, "all", subs, Resources{"gpu": gpus}, 110, fits...)
	}
	return parts, nodes
}

// Three partners of one member keyed by node name over 1,000 nodes: 10^9 assignments, of
// which the planner may look at only a few. With one GPU per node the first 1,000 in order
// put two partners on one node; the search skips them without placing anything.
func TestPlanGroupManySubDomainsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		gpus int64
		want []string
	}{
		{"roomy nodes", 8, []string{"n0000", "n0000", "n0000"}},
		{"one member per node", 1, []string{"n0000", "n0001", "n0002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			partners, nodes := hostGroup(1000, tc.gpus, 3, 1)
			var plans map[string]*GroupPlan
			allocs := testing.AllocsPerRun(1, func() { plans = PlanGroup(partners, nodes) })
			gp := plans["all"]
			if gp == nil || !gp.Feasible || !reflect.DeepEqual(gp.Sub, tc.want) {
				t.Fatalf("plan %+v, want feasible in %v", gp, tc.want)
			}
			t.Logf("%.0f allocations", allocs)
			// about 20 per node and partner for the per-node figures (57,000 in all when
			// written); the search adds a few dozen
			if limit := 100.0 * float64(len(nodes)); allocs > limit {
				t.Errorf("%.0f allocations, want at most %.0f", allocs, limit)
			}
		})
	}
}

// A search that reaches its bound says so: not Feasible, Truncated, with Holds as for an
// infeasible domain. Three one-member partners on two-GPU nodes: no pair conflicts, so the
// first assignment (all on n0000) is placed and fails; with one placement allowed the search
// stops there.
func TestPlanGroupSearchBound(t *testing.T) {
	partners, nodes := hostGroup(3, 2, 3, 1)
	if gp := PlanGroup(partners, nodes)["all"]; !gp.Feasible || gp.Truncated {
		t.Fatalf("unbounded: %+v, want feasible", gp)
	}
	defer func(n int) { maxGroupPlacements = n }(maxGroupPlacements)
	maxGroupPlacements = 1
	gp := PlanGroup(partners, nodes)["all"]
	if gp.Feasible || !gp.Truncated || gp.Holds != 3 {
		t.Fatalf("bounded: %+v, want not feasible, truncated, holds 3", gp)
	}
}

// The lazy search finds exactly what the sorted product of assignments finds (same Sub,
// Room, candidates and witness) on random small groups.
func TestPlanGroupLazyMatchesSortedProduct(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	checked := 0
	for i := 0; i < 3000; i++ {
		b := make([]byte, 96)
		rng.Read(b)
		partners, nodes := decodeGroupInstance(b)
		byGroup := map[string][]*GroupNode{}
		for j := range nodes {
			if nodes[j].Group != "" {
				byGroup[nodes[j].Group] = append(byGroup[nodes[j].Group], &nodes[j])
			}
		}
		plans := PlanGroup(partners, nodes)
		for d, ns := range byGroup {
			want := sortedProductPlan(newGroupSolver(partners, ns), d)
			got := plans[d]
			if got.Feasible != want.Feasible || !reflect.DeepEqual(got.Sub, want.Sub) || got.Room != want.Room ||
				!reflect.DeepEqual(got.Nodes, want.Nodes) || (got.Feasible && !reflect.DeepEqual(got.placed, want.placed)) {
				t.Fatalf("instance %d domain %s: lazy %+v, sorted product %+v\n%s", i, d, got, want, describeGroup(partners, nodes))
			}
			checked++
		}
	}
	t.Logf("%d group domains agree", checked)
}

// sortedProductPlan is the feasibility search as the full sorted product of assignments
// (the reference the lazy search must agree with); an infeasible domain gets only Need.
func sortedProductPlan(s *groupSolver, domain string) *GroupPlan {
	P := len(s.partners)
	gp := &GroupPlan{Domain: domain}
	for _, n := range s.need {
		gp.Need += n
	}
	// Feasibility: assignments among the sub-domains where each partner fits alone, by Room
	// then Sub vector; the first that fits in some order wins.
	choices := make([][]int, P)
	for p := range s.subs {
		for a, sd := range s.subs[p] {
			if sd.alone >= s.need[p] {
				choices[p] = append(choices[p], a)
			}
		}
	}
	assigns := product(choices, 0)
	roomOf := func(as []int) int {
		r := 0
		for p, a := range as {
			r += s.subs[p][a].room
		}
		return r
	}
	slices.SortStableFunc(assigns, func(x, y []int) int {
		if c := cmp.Compare(roomOf(x), roomOf(y)); c != 0 {
			return c
		}
		for p := range x {
			if c := cmp.Compare(s.subs[p][x[p]].value, s.subs[p][y[p]].value); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, as := range assigns {
		o, ok := s.fits(as, -1, -1)
		if !ok {
			continue
		}
		s.feasible(gp, as, o)
		return gp
	}
	return gp
}
