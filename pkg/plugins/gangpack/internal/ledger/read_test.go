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

// Read only reads: the reserved-node record of a member the informer shows bound stays until
// the pod event that shows the bind forgets it, and the debug view leaves the member out.
func TestReadKeepsBoundMembersRecordUntilTheBindEvent(t *testing.T) {
	p := member("g-0", "g")
	p.Spec.NodeName = "n0"
	p.Status.Phase = v1.PodSucceeded // not live: no node to look up in the snapshot
	b := newBench(t, p)
	b.l.MemberReserved(p, "n0")
	b.l.Read(info("g", 1), nil)
	b.l.Placed(info("g", 1), nil)
	if _, ok := b.l.reserved.get(p.UID); !ok {
		t.Fatal("Read forgot the reserved-node record")
	}
	if got := b.l.AssumedMembers(); len(got) != 0 {
		t.Fatalf("assumed members %+v, want the bound member left out", got)
	}
	unbound := p.DeepCopy()
	unbound.Spec.NodeName = ""
	b.l.doubtEvents().OnUpdate(unbound, p)
	if _, ok := b.l.reserved.get(p.UID); ok {
		t.Fatal("the bind event left the reserved-node record")
	}
}
