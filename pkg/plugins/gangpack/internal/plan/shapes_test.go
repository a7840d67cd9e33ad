package plan

import (
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"testing"

	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Past maxShapes, the least common shapes are planned as one shape with the largest request
// of each resource; the current pod's shape is always its own.
func TestShapeCapMerges(t *testing.T) {
	members := shapedMembers("g", 40)
	groups := shapeClasses(members, gang.ShapeKey)
	if len(groups) != 40 {
		t.Fatalf("%d shapes, want 40", len(groups))
	}
	capped := mergeClasses(groups, 16)
	if len(capped) != 16 || !capped[0].current {
		t.Fatalf("%d shapes (current first: %v), want 16 with the current pod's first", len(capped), capped[0].current)
	}
	total := 0
	for _, sg := range capped {
		total += sg.count
	}
	if total != 39 {
		t.Fatalf("capped shapes count %d siblings, want 39", total)
	}
	last := capped[15]
	if got := last.request["cpu"]; got != 49 {
		t.Fatalf("merged shape requests %d mCPU, want the largest, 49", got)
	}
	if last.rep.Name != "g-039" {
		t.Fatalf("merged shape planned with %s's constraints, want the largest member g-039", last.rep.Name)
	}
}

// Past maxShapes, two gangs whose merged shapes have equal maxima but whose representatives
// carry other node constraints do not share cached plans.
func TestMergedShapeSignatureNamesConstraints(t *testing.T) {
	sig := func(selector map[string]string) string {
		members := shapedMembers("g", 40)
		members[39].Spec.NodeSelector = selector // g-039, the largest, represents the merged shape
		groups := mergeClasses(shapeClasses(members, gang.ShapeKey), 16)
		if groups[15].rep.Name != "g-039" {
			t.Fatalf("merged shape represented by %s, want g-039", groups[15].rep.Name)
		}
		return signatureOf(testKey, topology.Gang{Need: 40}, groups, nil)
	}
	if sig(nil) == sig(map[string]string{"pool": "x"}) {
		t.Fatal("gangs with different node constraints share a plan cache signature")
	}
}
