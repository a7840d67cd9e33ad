package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// activationRecorder is a framework handle that records Activate calls.
type activationRecorder struct {
	fwk.Handle
	calls []map[string]*v1.Pod
}

func (r *activationRecorder) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	r.calls = append(r.calls, pods)
}

func pod(ns, name, group string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: map[string]string{}}}
	if group != "" {
		p.Labels[PodGroupLabel] = group
	}
	return p
}

// A drain wakes every standalone pod and one member per gang; the other members stay blocked.
func TestWakeBlockedOneMemberPerGang(t *testing.T) {
	pods := []*v1.Pod{
		pod("ns", "solo-a", ""), pod("ns", "solo-b", ""),
		pod("ns", "g1-1", "g1"), pod("ns", "g1-0", "g1"), pod("ns", "g1-2", "g1"),
		pod("ns", "g2-0", "g2"), pod("other", "g1-0", "g1"),
	}
	w := newWorld(t, nil, nil, pods)
	rec := &activationRecorder{Handle: w.h}
	pl := w.pl
	pl.handle = rec
	pl.ledger.SetHandle(rec)
	for _, p := range pods {
		pl.ledger.ParkBlocked(klog.Background(), p, pl.ledger.Generation())
	}
	pl.ledger.WakeBlocked(klog.Background())
	if len(rec.calls) != 1 {
		t.Fatalf("%d activation calls, want 1", len(rec.calls))
	}
	got := rec.calls[0]
	for _, k := range []string{"ns/solo-a", "ns/solo-b", "ns/g1-0", "ns/g2-0", "other/g1-0"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not activated (got %v)", k, keys(got))
		}
	}
	if len(got) != 5 {
		t.Fatalf("activated %v, want exactly 5 pods", keys(got))
	}
	left := pl.ledger.Blocked()
	if len(left) != 2 || left["ns/g1-1"] == nil || left["ns/g1-2"] == nil {
		t.Fatalf("still blocked %v, want ns/g1-1 and ns/g1-2", keys(left))
	}
	// The next drain wakes the next member of g1.
	pl.ledger.WakeBlocked(klog.Background())
	if _, ok := rec.calls[1]["ns/g1-1"]; !ok || len(rec.calls[1]) != 1 {
		t.Fatalf("second wake activated %v, want ns/g1-1", keys(rec.calls[1]))
	}
}

func keys(m map[string]*v1.Pod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
