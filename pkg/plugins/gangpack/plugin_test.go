package gangpack

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The plugin's construction: its arguments, and one profile per scheduler.

// The plugin enabled in two profiles of one scheduler is a startup error.
func TestTwoProfilesRefused(t *testing.T) {
	w := newWorld(t, nil, nil, nil)
	args := testArgsObject(t)
	if _, err := New(w.ctx, args, w.h); err != nil {
		t.Fatalf("first profile: %v", err)
	}
	_, err := New(w.ctx, args, w.h)
	if err == nil || !strings.Contains(err.Error(), "more than one scheduler profile") {
		t.Fatalf("second profile: err = %v, want the two-profiles error", err)
	}
}

func TestAllowedTopologyKeysValidation(t *testing.T) {
	args := testArgs()
	args.AllowedTopologyKeys = []string{"example.com/rack", "not a key"}
	if err := gang.ValidateArgs(args); err == nil || !strings.Contains(err.Error(), `allowedTopologyKeys: "not a key" is not a valid node label key`) {
		t.Fatalf("gang.ValidateArgs = %v", err)
	}
	args = testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](-1)
	if err := gang.ValidateArgs(args); err == nil || err.Error() != "maxHoldsPerNamespace must be between 0 and 1000000" {
		t.Fatalf("gang.ValidateArgs = %v", err)
	}
}

// The preemption switch is accepted (the chart renders it).
func TestPreemptionArgumentAccepted(t *testing.T) {
	args, err := gang.DecodeArgs(&runtime.Unknown{ContentType: runtime.ContentTypeJSON,
		Raw: []byte(`{"gcIntervalSeconds":60,"preemption":true}`)})
	if err != nil || !args.Preemption {
		t.Fatalf("gang.DecodeArgs = %+v, %v; want preemption true accepted", args, err)
	}
}
