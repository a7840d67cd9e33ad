package ledger

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestReservedNodes(t *testing.T) {
	r := newReservedNodes()
	a := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	r.set(a, "n1")
	r.set(b, "n2")
	r.set(a, "n3") // a re-reservation replaces the node
	if n, ok := r.get("uid-a"); !ok || n != "n3" {
		t.Fatalf("get(a) = %q, %v; want n3, true", n, ok)
	}
	r.forget("uid-a")
	if _, ok := r.get("uid-a"); ok {
		t.Fatal("a still recorded after forget")
	}
	r.set(a, "n1")
	var seen []string
	r.prune(func(ns, name string, uid types.UID) bool {
		seen = append(seen, ns+"/"+name)
		return uid == "uid-b"
	})
	if len(seen) != 2 || r.len() != 1 {
		t.Fatalf("prune saw %v and kept %d records; want both seen, 1 kept", seen, r.len())
	}
	if n, ok := r.get("uid-b"); !ok || n != "n2" {
		t.Fatalf("get(b) = %q, %v after prune; want n2, true", n, ok)
	}
}
