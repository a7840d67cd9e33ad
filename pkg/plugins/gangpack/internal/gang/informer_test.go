package gang

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Changes hands the callback typed old and new states: nil for the side that does not exist,
// the last known object of a tombstone, and nil for an object of another type.
func TestChanges(t *testing.T) {
	a := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	var got [][2]*v1.Pod
	h := Changes(func(old, cur *v1.Pod) { got = append(got, [2]*v1.Pod{old, cur}) })
	h.OnAdd(a, false)
	h.OnUpdate(a, b)
	h.OnDelete(b)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a})
	h.OnAdd(&v1.Node{}, false)
	want := [][2]*v1.Pod{{nil, a}, {a, b}, {b, nil}, {a, nil}, {nil, nil}}
	if len(got) != len(want) {
		t.Fatalf("%d calls, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %v, want %v", i, got[i], want[i])
		}
	}
}
