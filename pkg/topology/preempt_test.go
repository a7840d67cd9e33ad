package topology

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// vu builds a VictimUnit.
func vu(name string, prio int32, pods, pdb int, frees map[string]NodeFree) VictimUnit {
	return VictimUnit{Name: name, Priority: prio, Pods: pods, PDBViolations: pdb, Frees: frees}
}

// fg is what a unit frees on a node: gpus and pod slots.
func fg(gpus, pods int64) NodeFree { return NodeFree{Resources: gpu(gpus), Pods: pods} }

// gang4 is a gang of need members of 4 GPUs each, one shape.
func gang4(need int, apart bool) Gang {
	return Gang{Shapes: []Resources{gpu(4)}, Siblings: []int{need - 1}, Need: need, Apart: apart}
}

// preemptor is the preemptor priority of the table tests.
const preemptor = 10

func TestMinimalVictims(t *testing.T) {
	// Non-monotone room: shape A {cpu:1} (current), shape B {gpu:8, cpu:1}, siblings A,A,B.
	// A node where B also fits counts copies of the per-resource largest shape, so freeing
	// GPUs on a CPU-bound node can shrink its room.
	nonMono := Gang{Shapes: []Resources{{"cpu": 1}, {"gpu": 8, "cpu": 1}}, Siblings: []int{2, 1}, Need: 4}
	cases := []struct {
		name  string
		gang  Gang
		nodes []Node
		units []VictimUnit
		want  []int
		room  int
		ok    bool
	}{
		{
			name:  "a domain full of a low-priority gang: the whole gang is the victim set",
			gang:  gang4(2, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{vu("g", 1, 2, 0, map[string]NodeFree{"n1": fg(4, 1), "n2": fg(4, 1)})},
			want:  []int{0}, room: 2, ok: true,
		},
		{
			name:  "the gang already fits: no victim",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(4), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)})},
			want:  []int{}, room: 1, ok: true,
		},
		{
			name:  "a gang with a member in another domain is one unit; only this domain's frees count",
			gang:  gang4(2, false),
			nodes: []Node{nd("n1", "a", gpu(4), 10, true)},
			units: []VictimUnit{vu("g", 1, 2, 0, map[string]NodeFree{"n1": fg(4, 1), "elsewhere": fg(4, 1)})},
			want:  []int{0}, room: 2, ok: true,
		},
		{
			name:  "a unit only in another domain never helps",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true)},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"elsewhere": fg(8, 1)})},
			want:  nil, room: 0, ok: false,
		},
		{
			name:  "equal- and higher-priority units are never victims",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("equal", preemptor, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("higher", preemptor+1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: nil, room: 0, ok: false,
		},
		{
			name:  "the one lower-priority unit is the victim next to an equal one",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("equal", preemptor, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("lower", preemptor-1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 1, ok: true,
		},
		{
			name:  "the lower of two priorities is evicted",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("high", 5, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("low", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 1, ok: true,
		},
		{
			name:  "a PDB-protected unit is reprieved when another unit suffices",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("protected", 1, 1, 1, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("plain", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 1, ok: true,
		},
		{
			name:  "PDB protection outranks a lower priority",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("protected-low", 1, 1, 1, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("plain-high", 5, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 1, ok: true,
		},
		{
			name:  "a PDB-protected unit is evicted when nothing else makes room",
			gang:  gang4(2, true),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("protected", 1, 1, 1, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("plain", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{0, 1}, room: 2, ok: true,
		},
		{
			name:  "among equal priorities the larger unit is reprieved",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("gang", 1, 2, 0, map[string]NodeFree{"n1": fg(4, 2)}),
				vu("pod", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 1, ok: true,
		},
		{
			name:  "the name breaks the last tie: the smaller name is reprieved",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true)},
			units: []VictimUnit{
				vu("b", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
				vu("a", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
			},
			want: []int{0}, room: 1, ok: true,
		},
		{
			name: "shared members: the low pod on the half-free node suffices",
			gang: gang4(2, false),
			nodes: []Node{
				nd("n1", "a", gpu(4), 10, true), nd("n2", "a", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("low", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("high", 5, 1, 0, map[string]NodeFree{"n2": fg(8, 1)}),
			},
			want: []int{0}, room: 2, ok: true,
		},
		{
			name: "apart: the same cluster needs a distinct node freed, so the higher unit goes",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(4), 10, true), nd("n2", "a", gpu(0), 10, true),
			},
			units: []VictimUnit{
				vu("low", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("high", 5, 1, 0, map[string]NodeFree{"n2": fg(8, 1)}),
			},
			want: []int{1}, room: 2, ok: true,
		},
		{
			name: "apart: two victims on one node do not make room for two members",
			gang: gang4(2, true),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, false),
			},
			units: []VictimUnit{
				vu("p1", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("p2", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("p3", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: nil, room: 0, ok: false,
		},
		{
			name: "apart: victims on every node it needs",
			gang: gang4(3, true),
			nodes: []Node{
				nd("n1", "a", gpu(0), 10, true), nd("n2", "a", gpu(0), 10, true), nd("n3", "a", gpu(4), 10, true),
			},
			units: []VictimUnit{
				vu("g", 2, 2, 0, map[string]NodeFree{"n1": fg(4, 1), "n2": fg(4, 1)}),
				vu("p", 1, 1, 0, map[string]NodeFree{"n1": fg(4, 1)}),
				vu("q", 1, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1, 2}, room: 3, ok: true,
		},
		{
			name:  "freeing a node the gang may not use (Fits false) does not help",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, false)},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"n1": fg(8, 1)})},
			want:  nil, room: 0, ok: false,
		},
		{
			name:  "a node out of pod slots: Fits true is not enough, a freed slot is",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(8), 0, true)},
			units: []VictimUnit{vu("cpu-pod", 1, 1, 0, map[string]NodeFree{"n1": {Resources: Resources{"cpu": 500}, Pods: 1}})},
			want:  []int{0}, room: 1, ok: true,
		},
		{
			name:  "the resource fit is recomputed: Fits true with too few free GPUs needs a victim",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(2), 10, true)},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"n1": fg(2, 1)})},
			want:  []int{0}, room: 1, ok: true,
		},
		{
			name:  "a victim freeing only part of what is missing is not enough",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(1), 10, true)},
			units: []VictimUnit{vu("p", 1, 1, 0, map[string]NodeFree{"n1": fg(2, 1)})},
			want:  nil, room: 0, ok: false,
		},
		{
			name: "heterogeneous shapes: the large sibling needs the freed node",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(4)}, Current: 0, Siblings: []int{0, 1}, Need: 2},
			nodes: []Node{
				nd("n1", "a", gpu(1), 10, true, true), nd("n2", "a", gpu(0), 10, true, true),
			},
			units: []VictimUnit{
				vu("small", 1, 1, 0, map[string]NodeFree{"n1": fg(1, 1)}),
				vu("big", 2, 1, 0, map[string]NodeFree{"n2": fg(4, 1)}),
			},
			want: []int{1}, room: 2, ok: true,
		},
		{
			name:  "no eligible unit and no room",
			gang:  gang4(1, false),
			nodes: []Node{nd("n1", "a", gpu(0), 10, true)},
			units: nil,
			want:  nil, room: 0, ok: false,
		},
		{
			name: "non-monotone room: a second pass reprieves a unit the first pass kept",
			gang: nonMono,
			nodes: []Node{
				nd("n1", "a", Resources{"cpu": 4}, 10, true, true),
				nd("n2", "a", Resources{"cpu": 1, "gpu": 8}, 10, true, true),
			},
			// first pass: without x only y is evicted and n1 drops to one copy (no room), so
			// x is kept; without y, x alone leaves room; second pass: no victim at all fits.
			units: []VictimUnit{
				vu("x", 5, 1, 0, map[string]NodeFree{"n1": fg(24, 1)}),
				vu("y", 1, 1, 0, map[string]NodeFree{"n1": fg(8, 1)}),
			},
			want: []int{}, room: 5, ok: true,
		},
		{
			name: "non-monotone room: evicting every eligible unit decides, even if fewer would do",
			gang: nonMono,
			nodes: []Node{
				nd("n1", "a", Resources{"cpu": 4}, 10, true, true),
				nd("n2", "a", Resources{"cpu": 1}, 10, true, true),
			},
			// {u2} alone gives room 5, but with u1 also evicted n1 holds one copy: room 2 < 4.
			units: []VictimUnit{
				vu("u1", 1, 1, 0, map[string]NodeFree{"n1": fg(8, 1)}),
				vu("u2", 1, 1, 0, map[string]NodeFree{"n2": fg(8, 1)}),
			},
			want: nil, room: 0, ok: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.gang
			before := fmt.Sprintf("%+v %+v %+v", g, tc.nodes, tc.units)
			got, room, ok := MinimalVictims(&g, preemptor, tc.nodes, tc.units)
			if ok != tc.ok || room != tc.room || !slices.Equal(got, tc.want) {
				t.Fatalf("MinimalVictims = %v, room %d, ok %v; want %v, room %d, ok %v", got, room, ok, tc.want, tc.room, tc.ok)
			}
			if after := fmt.Sprintf("%+v %+v %+v", g, tc.nodes, tc.units); after != before {
				t.Fatalf("inputs changed:\n%s\n%s", before, after)
			}
			// the brute force agrees on feasibility and 1-minimality
			if msg := checkMinimalVictims(&g, preemptor, tc.nodes, tc.units); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

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

func TestNewPreemptionCandidate(t *testing.T) {
	units := []VictimUnit{
		vu("a", -5, 2, 1, nil),
		vu("b", 7, 3, 0, nil),
		vu("c", 3, 1, 2, nil),
	}
	g := gang4(4, false)
	got := NewPreemptionCandidate("d", &g, units, []int{0, 2}, 6)
	want := PreemptionCandidate{Domain: "d", Victims: []int{0, 2}, Room: 6, Need: 4, PDBViolations: 3,
		MaxPriority: 3, Pods: 3, PrioritySum: -10 + 3}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("NewPreemptionCandidate = %+v, want %+v", got, want)
	}
	empty := NewPreemptionCandidate("d", &g, units, nil, 4)
	if empty.MaxPriority != math.MinInt32 || empty.Pods != 0 || empty.PrioritySum != 0 || empty.PDBViolations != 0 {
		t.Fatalf("NewPreemptionCandidate(no victims) = %+v", empty)
	}
}

// TestMinimalVictimsBruteForce checks MinimalVictims and PreemptionCandidates against the
// exhaustive search over victim subsets on many small random instances.
func TestMinimalVictimsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(20250611))
	iters := bruteIterations(20000)
	var st preemptStats
	for i := 0; i < iters; i++ {
		b := make([]byte, 128)
		rng.Read(b)
		g, prio, nodes, units := decodePreemptInstance(b)
		if msg := checkPreemption(&g, prio, nodes, units, &st); msg != "" {
			t.Fatalf("instance %d: %s\ngang=%+v\nnodes=%+v\nunits=%+v", i, msg, g, nodes, units)
		}
	}
	t.Logf("%d instances: %+v", iters, st)
	if st.domains == 0 || st.ok == 0 || st.notOK == 0 || st.multi == 0 || st.empty == 0 || st.reprieved == 0 {
		t.Fatalf("generator degenerate: %+v", st)
	}
}

func sameCandidate(a, b *PreemptionCandidate) bool {
	return a.Domain == b.Domain && slices.Equal(a.Victims, b.Victims) && a.Room == b.Room && a.Need == b.Need &&
		a.PDBViolations == b.PDBViolations && a.MaxPriority == b.MaxPriority && a.Pods == b.Pods &&
		a.PrioritySum == b.PrioritySum
}

// BenchmarkMinimalVictims measures one domain of 18 nodes × 4 GPUs, every GPU taken by 20
// lower-priority units: 6 two-member gangs (one 4-GPU member per node) on 12 nodes and 14
// standalone 1- or 2-GPU pods on the other 6 nodes (some with a PDB).
func BenchmarkMinimalVictims(b *testing.B) {
	nodes := make([]Node, 18)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("n%02d", i), Domain: "rack", Free: Resources{"nvidia.com/gpu": 0, "cpu": 32000},
			FreePods: 100, Fits: []bool{i%9 != 4}}
	}
	res := func(gpus int64) Resources { return Resources{"nvidia.com/gpu": gpus, "cpu": 1000 * gpus} }
	var units []VictimUnit
	for k := 0; k < 6; k++ {
		units = append(units, VictimUnit{Name: fmt.Sprintf("gang-%d", k), Priority: int32(k % 3), Pods: 2,
			Frees: map[string]NodeFree{
				nodes[2*k].Name:   {Resources: res(4), Pods: 1},
				nodes[2*k+1].Name: {Resources: res(4), Pods: 1},
			}})
	}
	// 14 pods fill nodes 12..17: 2+1+1 GPUs on nodes 12 and 13, 2+2 on the other four.
	used := make([]int64, 18)
	for j := 0; j < 14; j++ {
		n := 12 + j%6
		g := int64(2)
		if n <= 13 && used[n] >= 2 {
			g = 1
		}
		used[n] += g
		pdb := 0
		if j%5 == 0 {
			pdb = 1
		}
		units = append(units, VictimUnit{Name: fmt.Sprintf("pod-%02d", j), Priority: int32(j % 4), Pods: 1, PDBViolations: pdb,
			Frees: map[string]NodeFree{nodes[n].Name: {Resources: res(g), Pods: 1}}})
	}
	for i := 12; i < 18; i++ {
		if used[i] != 4 {
			b.Fatalf("node %d uses %d GPUs", i, used[i])
		}
	}
	shape := Resources{"nvidia.com/gpu": 4, "cpu": 4000}
	for _, tc := range []struct {
		name string
		gang Gang
	}{
		{"apart-4x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{3}, Need: 4, Apart: true}},
		{"shared-8x2gpu", Gang{Shapes: []Resources{{"nvidia.com/gpu": 2, "cpu": 2000}}, Siblings: []int{7}, Need: 8}},
		{"standalone-1x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{0}, Need: 1}},
		{"apart-16x4gpu", Gang{Shapes: []Resources{shape}, Siblings: []int{15}, Need: 16, Apart: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := tc.gang
			if _, _, ok := MinimalVictims(&g, 10, nodes, units); !ok {
				b.Fatal("no room even with every unit evicted")
			}
			b.ReportAllocs()
			for b.Loop() {
				MinimalVictims(&g, 10, nodes, units)
			}
		})
	}
}
