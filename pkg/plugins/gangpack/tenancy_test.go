package gangpack

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// Multi-tenant limits: which topology keys a PodGroup may name, and how many gangs of one
// namespace may hold domains at once.

func TestTopologyKeyAllowlist(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1)}
	for _, tc := range []struct {
		name    string
		allowed []string
		key     string // annotation value; "" = none
		want    string // "" = planned
	}{
		{name: "no allowlist, any key", key: "kubernetes.io/os"},
		{name: "listed key", allowed: []string{"example.com/rack"}, key: "example.com/rack"},
		{name: "fallback key is always allowed", allowed: []string{"example.com/rack"}},
		{name: "other key refused", allowed: []string{"example.com/rack", "example.com/zone"}, key: "kubernetes.io/os",
			want: "PodGroup ns/g names topology key kubernetes.io/os, which the scheduler does not allow (allowed: " + testKey + ", example.com/rack, example.com/zone)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := testArgs()
			args.AllowedTopologyKeys = tc.allowed
			pg := podGroup("g", 1)
			if tc.key != "" {
				pg.Annotations = map[string]string{"ome.io/topology-key": tc.key}
			}
			m := gangMember("g-0", "g", 1)
			w := newWorld(t, args, nodes, []*v1.Pod{m}, pg)
			_, st := w.preFilter(m)
			if tc.want == "" {
				if st.Message() != "" && strings.Contains(st.Message(), "does not allow") {
					t.Fatalf("PreFilter = %v, want the key accepted", st)
				}
				return
			}
			if st.Code() != fwk.Unschedulable || st.Message() != tc.want {
				t.Fatalf("PreFilter = %v, want %q", st, tc.want)
			}
		})
	}
}

func TestAllowedTopologyKeysValidation(t *testing.T) {
	args := testArgs()
	args.AllowedTopologyKeys = []string{"example.com/rack", "not a key"}
	if err := ValidateArgs(args); err == nil || !strings.Contains(err.Error(), `allowedTopologyKeys: "not a key" is not a valid node label key`) {
		t.Fatalf("ValidateArgs = %v", err)
	}
	args = testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](-1)
	if err := ValidateArgs(args); err == nil || err.Error() != "maxHoldsPerNamespace must be between 0 and 1000000" {
		t.Fatalf("ValidateArgs = %v", err)
	}
}

func TestHoldCapPerNamespace(t *testing.T) {
	nodes := []*v1.Node{testNode("a0", "a", 1), testNode("a1", "a", 1), testNode("b0", "b", 1), testNode("b1", "b", 1)}
	x0, x1 := gangMember("x-0", "x", 1), gangMember("x-1", "x", 1)
	y0, y1 := gangMember("y-0", "y", 1), gangMember("y-1", "y", 1)
	args := testArgs()
	args.MaxHoldsPerNamespace = ptr.To[int64](1)
	w := newWorld(t, args, nodes, []*v1.Pod{x0, x1, y0, y1}, podGroup("x", 2), podGroup("y", 2))
	w.mustPin(x0) // x holds a domain while it forms
	_, st := w.preFilter(y0)
	if want := msgHoldCap("ns", 1); st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter(y-0) = %v, want %q", st, want)
	}
	if w.pl.blocked.len() != 1 {
		t.Fatal("the capped pod is not parked for the next hold lift")
	}
	w.mustPin(x1) // x's own members are not capped
}
