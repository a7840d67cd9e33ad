package gang

import (
	"slices"
	"testing"
)

// Placement label keys: unset is the pod's topology key and the rack label, a list replaces
// them, an empty list is none.
func TestPlacementLabelKeys(t *testing.T) {
	for _, tc := range []struct {
		raw, topologyKey string
		want             []string
	}{
		{`{"gcIntervalSeconds":45}`, "nvidia.com/gpu.clique", []string{"nvidia.com/gpu.clique", RackLabel}},
		{`{"gcIntervalSeconds":45}`, "", []string{RackLabel}},
		{`{"gcIntervalSeconds":45}`, RackLabel, []string{RackLabel}},
		{`{"gcIntervalSeconds":45,"placementLabels":["example.com/row"]}`, "nvidia.com/gpu.clique", []string{"example.com/row"}},
		{`{"gcIntervalSeconds":45,"placementLabels":[]}`, "nvidia.com/gpu.clique", []string{}},
	} {
		a, err := DecodeArgs(rawArgs(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if got := a.PlacementLabelKeys(tc.topologyKey); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s, key %q: PlacementLabelKeys = %v, want %v", tc.raw, tc.topologyKey, got, tc.want)
		}
	}
}
