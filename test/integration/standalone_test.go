package integration

import (
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The loop: a standalone pod on schedulerName ome-scheduler is scheduled by ome-scheduler onto
// the only node it fits, and the Scheduled event comes from the ome-scheduler profile.
func TestStandalonePodIsScheduled(t *testing.T) {
	e := newEnv(t)
	small := e.node(devenv.NodeSpec{Name: "small", GPUs: 1})
	big := e.node(devenv.NodeSpec{Name: "big", GPUs: 4})
	e.startScheduler(devenv.Profile{})

	e.pod(devenv.PodSpec{Name: "solo", GPUs: 3})
	got := e.bound(30*time.Second, "solo")
	if got["solo"] != big {
		t.Fatalf("solo bound to %s, want %s (the only node with 3 free GPUs; %s has 1)", got["solo"], big, small)
	}
	ev := waitScheduledEvent(t, e, "solo")
	if ev.ReportingController != devenv.SchedulerName {
		t.Fatalf("Scheduled event reported by %q, want %q", ev.ReportingController, devenv.SchedulerName)
	}
	if want := "Successfully assigned " + e.ns + "/solo to " + big; ev.Note != want {
		t.Fatalf("Scheduled event note %q, want %q", ev.Note, want)
	}
}
