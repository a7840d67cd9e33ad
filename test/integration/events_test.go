package integration

import (
	"context"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// waitScheduledEvent returns the pod's Scheduled event.
func waitScheduledEvent(t *testing.T, e *env, pod string) eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := e.cp.Client.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range evs.Items {
			if evs.Items[i].Regarding.Name == pod && evs.Items[i].Reason == "Scheduled" {
				found = &evs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Scheduled event for %s/%s", e.ns, pod)
	}
	return *found
}
