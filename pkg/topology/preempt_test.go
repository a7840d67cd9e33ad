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
