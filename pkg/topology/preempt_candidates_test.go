package topology

import (
	"math"
	"testing"
)

func TestPreemptionCandidates(t *testing.T) {
	cases := []struct {
		name  string
		gang  Gang
		nodes []Node
		units []VictimUnit
		want  []PreemptionCandidate
	}{
		{
			name: "a free node and one low standalone pod beat a two-member low gang (1 pod, not 2)",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(4), 10, true), nd("n2", "a", gpu(0), 10, true),
				nd("n3", "b", gpu(0), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("gang", 1, 2, 0, map[string]NodeFree{"n3": fg(4, 1), "n4": fg(4, 1)}),
				vu("pod", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "a", Victims: []int{1}, Room: 2, Need: 2, MaxPriority: 1, Pods: 1, PrioritySum: 1},
				{Domain: "b", Victims: []int{0}, Room: 2, Need: 2, MaxPriority: 1, Pods: 2, PrioritySum: 2},
			},
		},
		{
			name: "room only across two domains: no candidate",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(4), 10, true),
				nd("n2", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{vu("g", 1, 2, 0, map[string]NodeFree{"n2": fg(4, 1), "n9": fg(4, 1)})},
			want:  nil,
		},
		{
			name: "a gang spanning two domains is a victim in each; only its local half helps",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(4), 10, true), nd("n2", "a", gpu(0), 10, true),
				nd("n3", "b", gpu(4), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("g", 1, 2, 0, map[string]NodeFree{"n2": fg(4, 1), "n4": fg(4, 1)}),
				vu("p", 2, 1, 0, map[string]NodeFree{"n4": fg(4, 1)}),
			},
			// b: g alone suffices (p reprieved first, higher priority); a: g. Equal figures,
			// the name decides.
			want: []PreemptionCandidate{
				{Domain: "a", Victims: []int{0}, Room: 2, Need: 2, MaxPriority: 1, Pods: 2, PrioritySum: 2},
				{Domain: "b", Victims: []int{0}, Room: 2, Need: 2, MaxPriority: 1, Pods: 2, PrioritySum: 2},
			},
		},
		{
			name: "fewer PDB violations beat a lower priority",
			gang: gang4(1, false),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true),
				nd("n2", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("protected-low", 1, 1, 1, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("plain-high", 5, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "b", Victims: []int{1}, Room: 1, Need: 1, MaxPriority: 5, Pods: 1, PrioritySum: 5},
				{Domain: "a", Victims: []int{0}, Room: 1, Need: 1, PDBViolations: 1, MaxPriority: 1, Pods: 1, PrioritySum: 1},
			},
		},
		{
			name: "a lower highest priority beats fewer units",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true),
				nd("n3", "b", gpu(0), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("gang-mid", 3, 2, 0, map[string]NodeFree{"n1": fg(4, 1), "n2": fg(4, 1)}),
				vu("p", 1, 1, 0, map[string]NodeFree{"n3": fg(4, 1)}),
				vu("q", 1, 1, 0, map[string]NodeFree{"n4": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "b", Victims: []int{1, 2}, Room: 2, Need: 2, MaxPriority: 1, Pods: 2, PrioritySum: 2},
				{Domain: "a", Victims: []int{0}, Room: 2, Need: 2, MaxPriority: 3, Pods: 2, PrioritySum: 6},
			},
		},
		{
			name: "fewer units beat fewer pods",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true),
				nd("n3", "b", gpu(0), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("gang3", 1, 3, 0, map[string]NodeFree{"n1": fg(4, 1), "n2": fg(4, 1), "n9": fg(4, 1)}),
				vu("p", 1, 1, 0, map[string]NodeFree{"n3": fg(4, 1)}),
				vu("q", 1, 1, 0, map[string]NodeFree{"n4": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "a", Victims: []int{0}, Room: 2, Need: 2, MaxPriority: 1, Pods: 3, PrioritySum: 3},
				{Domain: "b", Victims: []int{1, 2}, Room: 2, Need: 2, MaxPriority: 1, Pods: 2, PrioritySum: 2},
			},
		},
		{
			name: "a smaller priority sum wins at equal highest priority, units and pods",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true),
				nd("n3", "b", gpu(0), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("a1", 3, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("a2", 3, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
				vu("b1", 3, 1, 0, map[string]NodeFree{"n3": fg(4, 1)}),
				vu("b2", 1, 1, 0, map[string]NodeFree{"n4": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "b", Victims: []int{2, 3}, Room: 2, Need: 2, MaxPriority: 3, Pods: 2, PrioritySum: 4},
				{Domain: "a", Victims: []int{0, 1}, Room: 2, Need: 2, MaxPriority: 3, Pods: 2, PrioritySum: 6},
			},
		},
		{
			name: "equal figures: the domain name decides",
			gang: gang4(1, false),
			nodes: []Node{
				nd("n3", "c", gpu(0), 10, true), nd("n4", "c", gpu(8), 10, false),
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(3), 10, true),
				nd("n5", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("pc", 1, 1, 0, map[string]NodeFree{"n3": fg(4, 1)}),
				vu("pa", 1, 1, 0, map[string]NodeFree{"n1": fg(8, 1)}),
				vu("pb", 1, 1, 0, map[string]NodeFree{"n5": fg(4, 1)}),
			},
			want: []PreemptionCandidate{
				{Domain: "a", Victims: []int{1}, Room: 1, Need: 1, MaxPriority: 1, Pods: 1, PrioritySum: 1},
				{Domain: "b", Victims: []int{2}, Room: 1, Need: 1, MaxPriority: 1, Pods: 1, PrioritySum: 1},
				{Domain: "c", Victims: []int{0}, Room: 1, Need: 1, MaxPriority: 1, Pods: 1, PrioritySum: 1},
			},
		},
		{
			name: "best fit with room to spare",
			gang: gang4(2, false),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(4), 10, true),
				nd("n3", "b", gpu(0), 10, true), nd("n4", "b", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("pa", 1, 1, 0, map[string]NodeFree{"n1": fg(8, 1)}),
				vu("pb", 1, 1, 0, map[string]NodeFree{"n3": fg(8, 1)}),
			},
			// a: 2 on n1 + 1 on n2 = 3; b: 2 on n3.
			want: []PreemptionCandidate{
				{Domain: "b", Victims: []int{1}, Room: 2, Need: 2, MaxPriority: 1, Pods: 1, PrioritySum: 1},
				{Domain: "a", Victims: []int{0}, Room: 3, Need: 2, MaxPriority: 1, Pods: 1, PrioritySum: 1},
			},
		},
		{
			name: "nodes in no domain are ignored",
			gang: gang4(1, false),
			nodes: []Node{
				nd("n1", "", gpu(0), 10, true),
			},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)})},
			want:  nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.gang
			got := PreemptionCandidates(&g, preemptor, tc.nodes, tc.units)
			if len(got) != len(tc.want) {
				t.Fatalf("PreemptionCandidates = %+v\nwant %+v", got, tc.want)
			}
			for i := range got {
				if !sameCandidate(&got[i], &tc.want[i]) {
					t.Fatalf("candidate %d = %+v\nwant %+v\nall %+v", i, got[i], tc.want[i], got)
				}
			}
			if i, ok := ChoosePreemptionCandidate(got); ok != (len(got) > 0) || (ok && i != 0) {
				t.Fatalf("ChoosePreemptionCandidate = %d,%v on a sorted answer", i, ok)
			}
		})
	}
}

func TestComparePreemptionCandidates(t *testing.T) {
	base := PreemptionCandidate{Domain: "m", Victims: []int{0, 1}, Room: 4, Need: 2, PDBViolations: 1,
		MaxPriority: 5, Pods: 4, PrioritySum: 12}
	with := func(f func(c *PreemptionCandidate)) PreemptionCandidate {
		c := base
		f(&c)
		return c
	}
	// each pair: better, worse, differing first in the named criterion (later criteria
	// pulling the other way)
	cases := []struct {
		name          string
		better, worse PreemptionCandidate
	}{
		{"fewer PDB violations", with(func(c *PreemptionCandidate) { c.PDBViolations = 0; c.MaxPriority = 9; c.Victims = []int{0, 1, 2} }), base},
		{"lower highest priority", with(func(c *PreemptionCandidate) { c.MaxPriority = 4; c.Victims = []int{0, 1, 2}; c.Pods = 9 }), base},
		{"negative priorities", with(func(c *PreemptionCandidate) { c.MaxPriority = -3 }), with(func(c *PreemptionCandidate) { c.MaxPriority = -2; c.Pods = 1 })},
		{"no victim beats any victim", with(func(c *PreemptionCandidate) {
			c.MaxPriority = math.MinInt32
			c.Victims = nil
			c.Pods = 0
			c.PrioritySum = 0
			c.PDBViolations = 0
		}), base},
		{"fewer units", with(func(c *PreemptionCandidate) { c.Victims = []int{7}; c.Pods = 9; c.PrioritySum = 40 }), base},
		{"fewer pods", with(func(c *PreemptionCandidate) { c.Pods = 3; c.PrioritySum = 15; c.Room = 9 }), base},
		{"smaller priority sum", with(func(c *PreemptionCandidate) { c.PrioritySum = 11; c.Room = 9; c.Domain = "z" }), base},
		{"less room left", with(func(c *PreemptionCandidate) { c.Room = 3; c.Domain = "z" }), base},
		{"room left, not room", with(func(c *PreemptionCandidate) { c.Room = 6; c.Need = 5; c.Domain = "z" }), base},
		{"domain name", with(func(c *PreemptionCandidate) { c.Domain = "a" }), base},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c := ComparePreemptionCandidates(&tc.better, &tc.worse); c != -1 {
				t.Fatalf("Compare(better, worse) = %d", c)
			}
			if c := ComparePreemptionCandidates(&tc.worse, &tc.better); c != 1 {
				t.Fatalf("Compare(worse, better) = %d", c)
			}
			if c := ComparePreemptionCandidates(&tc.better, &tc.better); c != 0 {
				t.Fatalf("Compare(x, x) = %d", c)
			}
			for _, cs := range [][]PreemptionCandidate{{tc.better, tc.worse}, {tc.worse, tc.better}} {
				i, ok := ChoosePreemptionCandidate(cs)
				if !ok || cs[i].Domain != tc.better.Domain || ComparePreemptionCandidates(&cs[i], &tc.better) != 0 {
					t.Fatalf("ChoosePreemptionCandidate(%+v) = %d,%v", cs, i, ok)
				}
			}
		})
	}
	if i, ok := ChoosePreemptionCandidate(nil); ok || i != -1 {
		t.Fatalf("ChoosePreemptionCandidate(nil) = %d,%v", i, ok)
	}
	// equal candidates: the first wins
	if i, ok := ChoosePreemptionCandidate([]PreemptionCandidate{base, base, base}); !ok || i != 0 {
		t.Fatalf("ChoosePreemptionCandidate(equal) = %d,%v", i, ok)
	}
}
