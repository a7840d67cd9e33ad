package plan

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The cached shape key is gang.ShapeKey of the pod as it is: a new resourceVersion or node
// name computes it again; pods without UID or resourceVersion are never cached.
func TestShapeKeysFollowThePod(t *testing.T) {
	pod := func(uid, rv, cpu string) *v1.Pod {
		p := &v1.Pod{}
		p.UID, p.ResourceVersion = types.UID(uid), rv
		p.Spec.Containers = []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}
		return p
	}
	c := newShapeKeys()
	a := pod("a", "1", "1")
	if got, want := c.key(a), gang.ShapeKey(a); got != want {
		t.Fatalf("key = %s, want %s", got, want)
	}
	// The same UID and version with another spec would be a stale read; a new version is not.
	grown := pod("a", "2", "2")
	if got, want := c.key(grown), gang.ShapeKey(grown); got != want || got == gang.ShapeKey(a) {
		t.Fatalf("key after an update = %s, want %s", got, want)
	}
	assumed := pod("a", "2", "2")
	assumed.Spec.NodeName = "n1"
	if got, want := c.key(assumed), gang.ShapeKey(assumed); got != want {
		t.Fatalf("key of the assumed copy = %s, want %s", got, want)
	}
	inMemory := pod("", "", "3")
	if got, want := c.key(inMemory), gang.ShapeKey(inMemory); got != want || len(c.m) != 1 {
		t.Fatalf("key of a pod not from the API = %s (cached %d), want %s and nothing cached", got, len(c.m), want)
	}
	var none *shapeKeys
	if got, want := none.key(a), gang.ShapeKey(a); got != want {
		t.Fatalf("nil cache key = %s, want %s", got, want)
	}
	for i := 0; i < shapeKeyLimit+10; i++ {
		c.key(pod(fmt.Sprintf("p%d", i), "1", "1"))
	}
	if len(c.m) > shapeKeyLimit {
		t.Fatalf("%d keys kept, limit %d", len(c.m), shapeKeyLimit)
	}
}
