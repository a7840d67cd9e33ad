package gangpack

import (
	"slices"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A partner's planning finds its bound partner through the gang member index: placing the
// group reads no pod of the 80 on the cluster's nodes.
func TestPartnerGroupPlacementReadsNoPods(t *testing.T) {
	nodes := zonesWithRepeatedRacks()[:8]
	a, b := members("a", 2), members("b", 2)
	b[0].Spec.NodeName, b[1].Spec.NodeName = "a-r1-0", "a-r1-1"
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b, filler(nodes, 10)),
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	reads := 0
	cs := framework.NewCycleState()
	res, st := w.pl.PreFilter(w.ctx, cs, a[0], w.counted(&reads))
	if !st.IsSuccess() {
		t.Fatalf("PreFilter(a-0) = %v", st)
	}
	if z := w.zoneOfNodes(res.NodeNames.UnsortedList()); !slices.Equal(z, []string{"A"}) {
		t.Errorf("a-0 candidates in zones %v, want A (b's)", z)
	}
	if reads != 0 {
		t.Errorf("placing the group read %d pods, want 0", reads)
	}
}

// The group key is a topology key a tenant names: allowedTopologyKeys applies to it as to a
// gang's own key (a group key such as kubernetes.io/os makes one group domain of the whole
// cluster).
func TestPartnerGroupKeyMustBeAllowed(t *testing.T) {
	args := groupArgs()
	args.AllowedTopologyKeys = []string{testKey}
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, args, cliqueNodes("c4", "z1", 4), slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	_, st := w.preFilter(a[0])
	want := "PodGroup ns/a names topology key example.com/zone, which the scheduler does not allow (allowed: example.com/clique)"
	if st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Fatalf("PreFilter = %v, want Unschedulable %q", st, want)
	}
	if w.pl.ledger.Len() != 0 {
		t.Errorf("pinned despite the refused group key")
	}
}
