package plan

import (
	"reflect"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/quality"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

const gpu = "nvidia.com/gpu"

func gpuNode(name, domain string, free int64, fits bool) topology.Node {
	return topology.Node{Name: name, Domain: domain, Free: topology.Resources{gpu: free, "cpu": 64000}, FreePods: 110, Fits: []bool{fits}}
}

func TestMemberRooms(t *testing.T) {
	oneGPU := topology.Gang{Shapes: []topology.Resources{{gpu: 1}}, Siblings: []int{1}, Need: 2}
	nodes := []topology.Node{
		gpuNode("a0", "a", 0, false), // occupied: the member does not fit
		gpuNode("a1", "a", 1, true),
		gpuNode("b0", "b", 8, true), // 8 members when they may share a node: no cap at need
		gpuNode("c0", "c", 1, false),
		gpuNode("x", "", 4, true), // unlabelled: in no domain
	}
	if got, want := memberRooms(&oneGPU, nodes), map[string]int{"a": 1, "b": 8, "c": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("memberRooms = %v, want %v", got, want)
	}
	apartGang := oneGPU
	apartGang.Apart = true
	if got, want := memberRooms(&apartGang, nodes), map[string]int{"a": 1, "b": 1, "c": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("memberRooms(apart) = %v, want %v", got, want)
	}
	if oneGPU.Need != 2 {
		t.Fatal("memberRooms modified the gang")
	}
	// The fragmentation fixture of the integration test: 1 free GPU in each of two domains.
	frag := []topology.Node{gpuNode("a0", "a", 0, false), gpuNode("a1", "a", 1, true), gpuNode("b0", "b", 0, false), gpuNode("b1", "b", 1, true)}
	rooms := memberRooms(&apartGang, frag)
	if _, largest, _ := topology.Largest(rooms); largest != 1 {
		t.Fatalf("largest room %d, want 1", largest)
	}
	if got := quality.StrandedUnits(rooms, freeUnits(frag, gpu), 2); got != 2 {
		t.Fatalf("stranded %d, want 2", got)
	}
}

func TestPrimaryResource(t *testing.T) {
	cases := []struct {
		shapes []topology.Resources
		want   string
		ok     bool
	}{
		{nil, "", false},
		{[]topology.Resources{{"cpu": 1000, "memory": 1 << 30, "ephemeral-storage": 1}}, "", false},
		{[]topology.Resources{{"cpu": 1000, gpu: 1}}, gpu, true},
		{[]topology.Resources{{gpu: 1}, {"example.com/fpga": 2}}, "example.com/fpga", true},
		{[]topology.Resources{{"example.com/gpu": 2, gpu: 2}}, "example.com/gpu", true}, // tie → name
		{[]topology.Resources{{gpu: 0, "hugepages-2Mi": 4}}, "", false},
		{[]topology.Resources{{"kubernetes.io/batteries": 3, "requests.example.com/x": 9}}, "", false},
	}
	for _, c := range cases {
		got, ok := primaryResource(c.shapes)
		if got != c.want || ok != c.ok {
			t.Errorf("primaryResource(%v) = %q,%v; want %q,%v", c.shapes, got, ok, c.want, c.ok)
		}
	}
}

func TestFreeUnits(t *testing.T) {
	nodes := []topology.Node{gpuNode("a0", "a", 3, true), gpuNode("a1", "a", -1, true), gpuNode("b0", "b", 0, false), gpuNode("u", "", 5, true)}
	if got, want := freeUnits(nodes, gpu), map[string]int64{"a": 3, "b": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("freeUnits = %v, want %v (negative free clamps to 0, unlabelled ignored)", got, want)
	}
}
