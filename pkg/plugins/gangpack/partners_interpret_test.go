package gangpack

import (
	"slices"
	"strings"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Partner placement groups as PreFilter reads them: the group label on the PodGroup or the
// pods, the size and key annotations, the topology-key allowlist, the feature off.

// G6 and rule 6: PodGroups that disagree, or a bad size, park every partner with the exact text.
func TestPartnerGroupErrors(t *testing.T) {
	nodes := cliqueNodes("c4", "", 4)
	a, b := members("a", 2), members("b", 2)
	cases := []struct {
		name   string
		pa, pb *schedv1alpha1.PodGroup
		want   string
	}{
		{"sizes disagree", partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "3", ""),
			"placement group ns/grp: PodGroups disagree on ome.io/placement-group-size"},
		{"keys disagree", partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", ""),
			"placement group ns/grp: PodGroups disagree on ome.io/placement-group-topology-key"},
		{"size 1", partnerPG("a", 2, "grp", "1", ""), partnerPG("b", 2, "grp", "1", ""),
			"placement group ns/grp: ome.io/placement-group-size must be an integer of at least 2"},
		{"size missing", partnerPG("a", 2, "grp", "", ""), partnerPG("b", 2, "grp", "", ""),
			"placement group ns/grp: ome.io/placement-group-size must be an integer of at least 2"},
		{"size not a number", partnerPG("a", 2, "grp", "two", ""), partnerPG("b", 2, "grp", "2", ""),
			"placement group ns/grp: ome.io/placement-group-size must be an integer of at least 2"},
		{"three PodGroups for two", partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""),
			"placement group ns/grp: PodGroups disagree on ome.io/placement-group-size: 3 PodGroups carry the group label, the size is 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pgs := []*schedv1alpha1.PodGroup{tc.pa, tc.pb}
			if strings.HasPrefix(tc.name, "three") {
				pgs = append(pgs, partnerPG("c", 1, "grp", "2", ""))
			}
			w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b), pgs...)
			_, st := w.preFilter(a[0])
			if st.Message() != tc.want || st.Code() != fwk.Unschedulable {
				t.Errorf("PreFilter = %v %q, want Unschedulable %q", st.Code(), st.Message(), tc.want)
			}
			if w.pl.ledger.Stats().Pins != 0 {
				t.Errorf("pinned despite the error")
			}
		})
	}
}

// The group label may sit on every member pod instead of the PodGroup.
func TestPartnerGroupLabelOnPods(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2))
	a, b := members("a", 2), members("b", 2)
	for _, p := range slices.Concat(a, b) {
		p.Labels[testGroupLabel] = "grp"
	}
	pa, pb := partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", "")
	pa.Labels, pb.Labels = nil, nil
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b), pa, pb)
	c := w.mustPin(b[0])
	if got := domainOf(t, c.res.NodeNames.UnsortedList()); got != "c4" {
		t.Fatalf("b-0 candidates in %s, want c4", got)
	}
	if p, ok := w.pl.ledger.Commitment("ns/a"); !ok || p.Domain != "c4" {
		t.Errorf("a pinned %v in %q, want c4 with b", ok, p.Domain)
	}
}

// Partner groups off (placementGroupLabel ""): the label means nothing and each gang is
// placed alone by best fit.
func TestPartnerGroupOff(t *testing.T) {
	nodes := slices.Concat(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2))
	a := members("a", 2)
	w := newWorld(t, nil, nodes, a, partnerPG("a", 2, "grp", "2", ""))
	c := w.mustPin(a[0])
	if got := domainOf(t, c.res.NodeNames.UnsortedList()); got != "c2" {
		t.Fatalf("a-0 candidates in %s, want c2 (best fit alone)", got)
	}
}

// A size above the supported bound is refused with the size message and its detail.
func TestPartnerGroupTooLarge(t *testing.T) {
	a := members("a", 1)
	w := newWorld(t, groupArgs(), cliqueNodes("c4", "", 4), a, partnerPG("a", 1, "grp", "5", ""))
	_, st := w.preFilter(a[0])
	want := "placement group ns/grp: ome.io/placement-group-size must be an integer of at least 2: at most 4 partners are supported"
	if st.Message() != want {
		t.Errorf("PreFilter = %q, want %q", st.Message(), want)
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
	if w.pl.ledger.Stats().Pins != 0 {
		t.Errorf("pinned despite the refused group key")
	}
}

// Any group label and annotation values give either no group, a valid group (size 2 to 4, a
// label key), or one of the documented reasons; never a panic.
func FuzzPlacementGroupInterpretation(f *testing.F) {
	f.Add("grp", "2", "", true)
	f.Add("grp", "-1", "not a key/", false)
	f.Add("", "3", "topology.kubernetes.io/zone", true)
	f.Add("g", "99999999999999999999", "x", true)
	f.Fuzz(func(t *testing.T, name, size, key string, onGroup bool) {
		pg := partnerPG("a", 2, name, size, key)
		pod := gangMember("a-0", "a", 1)
		if !onGroup {
			pg.Labels = nil
			pod.Labels[testGroupLabel] = name
		}
		g, st := gang.InterpretGroup(groupArgs(), pod, pg, testKey)
		switch {
		case st == nil && g == nil:
			if name != "" {
				t.Fatalf("group %q ignored", name)
			}
		case st == nil:
			if g.Size < 2 || g.Size > gang.MaxGroupSize || g.TopologyKey == "" || g.Key != "ns/"+name {
				t.Fatalf("accepted an invalid group: %+v", g)
			}
		case !strings.HasPrefix(st.Message(), "placement group ns/"+name+": "):
			t.Fatalf("unknown reason %q", st.Message())
		}
	})
}
