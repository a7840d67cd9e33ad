package gangpack

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestSignPod(t *testing.T) {
	pl := newWorld(t, nil, nil, nil).pl
	standalone := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"app": "x"}}}
	frags, st := pl.SignPod(context.Background(), standalone)
	if !st.IsSuccess() || len(frags) != 1 || frags[0].Key != standaloneSignKey || frags[0].Value != true {
		t.Fatalf("standalone pod: %v %v, want one %s fragment", frags, st, standaloneSignKey)
	}
	member := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Labels: map[string]string{PodGroupLabel: "g"}}}
	if frags, st := pl.SignPod(context.Background(), member); st.Code() != fwk.Unschedulable || frags != nil {
		t.Fatalf("gang member: %v %v, want Unschedulable (not batched)", frags, st)
	}
	empty := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{PodGroupLabel: ""}}}
	if _, st := pl.SignPod(context.Background(), empty); !st.IsSuccess() {
		t.Fatalf("empty pod-group label is standalone, got %v", st)
	}
}
