package topology

import (
	"testing"
)

// nd builds a Node.
func nd(name, domain string, free Resources, pods int64, fits ...bool) Node {
	return Node{Name: name, Domain: domain, Free: free, FreePods: pods, Fits: fits}
}

func gpu(n int64) Resources { return Resources{"gpu": n} }

func TestNodeRoom(t *testing.T) {
	cases := []struct {
		name string
		gang Gang
		node Node
		want int
	}{
		{
			name: "no shape fits",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 4},
			node: nd("n", "a", gpu(8), 110, false),
			want: 0,
		},
		{
			name: "fit vector shorter than shapes counts as no fit",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Need: 4},
			node: nd("n", "a", gpu(8), 110),
			want: 0,
		},
		{
			name: "only the fitting shape of a longer list",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(2)}, Need: 4},
			node: nd("n", "a", gpu(8), 110, true),
			want: 4,
		},
		{
			name: "apart caps at one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 4, Apart: true},
			node: nd("n", "a", gpu(8), 110, true),
			want: 1,
		},
		{
			name: "apart on a node with no spare copies is still one",
			gang: Gang{Shapes: []Resources{gpu(4)}, Need: 4, Apart: true},
			node: nd("n", "a", gpu(1), 110, true),
			want: 1,
		},
		{
			name: "copies limited by the gpu count",
			gang: Gang{Shapes: []Resources{gpu(2)}, Need: 8},
			node: nd("n", "a", gpu(5), 110, true),
			want: 2,
		},
		{
			name: "copies limited by cpu while gpus are plentiful",
			gang: Gang{Shapes: []Resources{{"gpu": 1, "cpu": 4000}}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 8, "cpu": 10000}, 110, true),
			want: 2,
		},
		{
			name: "copies limited by memory, the tightest of three resources",
			gang: Gang{Shapes: []Resources{{"gpu": 1, "cpu": 1000, "memory": 10}}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 8, "cpu": 6000, "memory": 35}, 110, true),
			want: 3,
		},
		{
			name: "copies limited by FreePods",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), 3, true),
			want: 3,
		},
		{
			name: "no free pod slot still reports one (fit already admits one member)",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), 0, true),
			want: 1,
		},
		{
			name: "negative FreePods clamps to one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(8), -3, true),
			want: 1,
		},
		{
			name: "negative free resource clamps to zero copies then one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(-4), 110, true),
			want: 1,
		},
		{
			name: "negative free of one resource does not affect an unrequested one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", Resources{"gpu": 3, "cpu": -100}, 110, true),
			want: 3,
		},
		{
			name: "missing resource on the node counts as zero free",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", Resources{"cpu": 1000}, 110, true),
			want: 1,
		},
		{
			name: "perNode = Need caps a large node",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 3},
			node: nd("n", "a", gpu(8), 110, true),
			want: 3,
		},
		{
			name: "Need below one is treated as one",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 0},
			node: nd("n", "a", gpu(8), 110, true),
			want: 1,
		},
		{
			name: "zero-request member limited by pods",
			gang: Gang{Shapes: []Resources{{}}, Need: 10},
			node: nd("n", "a", Resources{}, 5, true),
			want: 5,
		},
		{
			name: "explicit zero requests limited by pods",
			gang: Gang{Shapes: []Resources{{"gpu": 0, "cpu": 0}}, Need: 10},
			node: nd("n", "a", Resources{}, 4, true),
			want: 4,
		},
		{
			name: "zero-request member limited by Need when pods are plentiful",
			gang: Gang{Shapes: []Resources{{}}, Need: 2},
			node: nd("n", "a", nil, 110, true),
			want: 2,
		},
		{
			name: "largest fitting shape sets the copy size",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(4)}, Need: 8},
			node: nd("n", "a", gpu(8), 110, true, true),
			want: 2,
		},
		{
			name: "non-fitting large shape is ignored",
			gang: Gang{Shapes: []Resources{gpu(1), gpu(4)}, Need: 8},
			node: nd("n", "a", gpu(6), 110, true, false),
			want: 6,
		},
		{
			name: "per-resource maximum across shapes",
			gang: Gang{Shapes: []Resources{{"cpu": 4, "gpu": 1}, {"cpu": 1, "gpu": 2}}, Need: 8},
			node: nd("n", "a", Resources{"cpu": 8, "gpu": 8}, 110, true, true),
			want: 2, // perCopy = {cpu:4, gpu:2} → min(8/4, 8/2)
		},
		{
			name: "extra fit entries beyond the shapes are ignored",
			gang: Gang{Shapes: []Resources{gpu(1)}, Need: 8},
			node: nd("n", "a", gpu(2), 110, false, true),
			want: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, n := tc.gang, tc.node
			if got := NodeRoom(&g, &n); got != tc.want {
				t.Fatalf("NodeRoom = %d, want %d", got, tc.want)
			}
		})
	}
}
