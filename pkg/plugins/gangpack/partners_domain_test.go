package gangpack

import (
	"slices"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// The group domain: partner keys not nested in the group key (rack values repeat in every
// zone), the partners that anchor the group, and the group key's label changes.

// rackNode is a one-GPU node of rack (the gangs' key) in zone (no zone label when "").
func rackNode(name, zone, rack string) *v1.Node {
	n := testNode(name, rack, 1)
	if zone != "" {
		n.Labels[testZoneKey] = zone
	}
	return n
}

// zonesWithRepeatedRacks: zone A has racks r1 and r2 (two nodes each), zone B has racks r1
// and r2 (two nodes each), and two nodes of rack r1 carry no zone.
func zonesWithRepeatedRacks() []*v1.Node {
	return []*v1.Node{
		rackNode("a-r1-0", "A", "r1"), rackNode("a-r1-1", "A", "r1"), rackNode("a-r2-0", "A", "r2"), rackNode("a-r2-1", "A", "r2"),
		rackNode("b-r1-0", "B", "r1"), rackNode("b-r1-1", "B", "r1"), rackNode("b-r2-0", "B", "r2"), rackNode("b-r2-1", "B", "r2"),
		rackNode("x-r1-0", "", "r1"), rackNode("x-r1-1", "", "r1"),
	}
}

// zoneOfNodes returns the zones of the named nodes.
func (w *world) zoneOfNodes(names []string) []string {
	var out []string
	for _, name := range names {
		for _, n := range w.nodes {
			if n.Name == name && !slices.Contains(out, n.Labels[testZoneKey]) {
				out = append(out, n.Labels[testZoneKey])
			}
		}
	}
	sort.Strings(out)
	return out
}

// zoneGroupOfTwo is a placement group of partners a and b (2 members each) keyed by zone, on
// zone A and zone B's rack r1 only (racks repeat across zones).
func zoneGroupOfTwo(t *testing.T) (*world, []*v1.Pod, []*v1.Pod) {
	t.Helper()
	nodes := zonesWithRepeatedRacks()[:6] // zone A, and zone B's rack r1 only
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	return w, a, b
}

// A partner's pin keeps its group domain: zone B has only rack r1 free (zone B's r2 is
// full), so the group goes to zone A, partner a to rack r1 there. Every candidate of a's
// members, a's reservation, and the nodes Filter lets a's member use are in zone A, though
// rack r1 also exists in zone B.
func TestPartnerGroupStaysInGroupDomain(t *testing.T) {
	w, a, _ := zoneGroupOfTwo(t)

	c := w.mustPin(a[0])
	cands := c.res.NodeNames.UnsortedList()
	if z := w.zoneOfNodes(cands); !slices.Equal(z, []string{"A"}) {
		t.Fatalf("a-0 candidates %v in zones %v, want zone A only", cands, z)
	}
	sort.Strings(cands)
	if st := c.reserveOn(cands[0]); st.Code() != fwk.Wait {
		t.Fatalf("a-0 Permit = %v, want Wait", st)
	}
	w.resnap(assumed(a[0], cands[0]))

	c = w.mustPin(a[1])
	if z := w.zoneOfNodes(c.res.NodeNames.UnsortedList()); !slices.Equal(z, []string{"A"}) {
		t.Errorf("a-1 candidates %v in zones %v, want zone A only", c.res.NodeNames.UnsortedList(), z)
	}
	pa, _ := w.pl.ledger.Commitment("ns/a")
	var reserved []string
	for n := range pa.Reserved {
		reserved = append(reserved, n)
	}
	if z := w.zoneOfNodes(reserved); len(z) > 0 && !slices.Equal(z, []string{"A"}) {
		t.Errorf("a reserves %v in zones %v, want zone A only", reserved, z)
	}
	for _, name := range []string{"b-r1-0", "b-r1-1"} {
		ni, err := w.h.snapshot.NodeInfos().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if st := w.pl.Filter(w.ctx, c.cs, a[1], ni); st.IsSuccess() {
			t.Errorf("Filter(a-1 on %s in zone B) passed, want refused", name)
		}
	}
}

// The partners already pinned or placed must fix one group domain; otherwise the missing
// partner waits with a reason instead of being planned in the wrong zone or in any zone.
func TestPartnerGroupAnchorWaits(t *testing.T) {
	bound := func(p *v1.Pod, node string) *v1.Pod { p.Spec.NodeName = node; return p }
	for _, tc := range []struct {
		name  string
		size  string
		pods  func() []*v1.Pod
		pgs   []string // partner PodGroups (minMember 2; a's is 3 when a-2 is planned)
		pod   string   // the pod planned
		wantF func() string
	}{
		{
			name: "anchor nodes lack the group key", size: "2", pgs: []string{"a", "b"}, pod: "a-0",
			pods: func() []*v1.Pod {
				b := members("b", 2)
				return slices.Concat(members("a", 2), []*v1.Pod{bound(b[0], "x-r1-0"), bound(b[1], "x-r1-1")})
			},
			wantF: func() string { return msg.GroupAnchorNoLabel("ns/grp", "ns/b", testZoneKey) },
		},
		{
			name: "bound partner spans group domains", size: "2", pgs: []string{"a", "b"}, pod: "a-0",
			pods: func() []*v1.Pod {
				b := members("b", 2)
				return slices.Concat(members("a", 2), []*v1.Pod{bound(b[0], "a-r1-0"), bound(b[1], "b-r1-0")})
			},
			wantF: func() string { return msg.GroupStraddles("ns/grp", "ns/b", testZoneKey, []string{"A", "B"}) },
		},
		{
			name: "bound partners in different group domains", size: "3", pgs: []string{"a", "b", "c"}, pod: "a-0",
			pods: func() []*v1.Pod {
				b, c := members("b", 2), members("c", 2)
				return slices.Concat(members("a", 2), []*v1.Pod{bound(b[0], "a-r1-0"), bound(b[1], "a-r1-1"),
					bound(c[0], "b-r2-0"), bound(c[1], "b-r2-1")})
			},
			wantF: func() string { return msg.GroupSplit("ns/grp", testZoneKey, []string{"A", "B"}) },
		},
		{
			name: "own placed members span group domains", size: "2", pgs: []string{"a", "b"}, pod: "a-2",
			pods: func() []*v1.Pod {
				a, b := members("a", 3), members("b", 2)
				return []*v1.Pod{bound(a[0], "a-r1-0"), bound(a[1], "b-r1-0"), a[2],
					bound(b[0], "a-r2-0"), bound(b[1], "a-r2-1")}
			},
			wantF: func() string { return msg.GroupStraddles("ns/grp", "ns/a", testZoneKey, []string{"A", "B"}) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods()
			w := newWorld(t, groupArgs(), zonesWithRepeatedRacks(), pods)
			for _, name := range tc.pgs {
				min := int32(2)
				if name == "a" && tc.pod == "a-2" {
					min = 3
				}
				w.putPodGroup(partnerPG(name, min, "grp", tc.size, testZoneKey))
			}
			var target *v1.Pod
			for _, p := range pods {
				if p.Name == tc.pod {
					target = p
				}
			}
			_, st := w.preFilter(target)
			if want := tc.wantF(); st.Code() != fwk.Unschedulable || st.Message() != want {
				t.Fatalf("PreFilter(%s) = %v, want Unschedulable %q", tc.pod, st, want)
			}
		})
	}
}

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

// A partner whose pin goes stale re-plans with its group: zone A holds partners a (rack r1)
// and b (rack r2); a-0 waits at Permit in zone A when one of b's nodes is deleted. b's pin
// has lost its room, and zone A has none left for b, so b-0 must not be placed at all, and
// in particular not on zone B's free rack r1, away from a.
func TestPartnerStalePinReplansWithItsGroup(t *testing.T) {
	w, a, b := zoneGroupOfTwo(t)

	c := w.mustPin(a[0])
	cands := c.res.NodeNames.UnsortedList()
	sort.Strings(cands)
	if st := c.reserveOn(cands[0]); st.Code() != fwk.Wait {
		t.Fatalf("a-0 Permit = %v, want Wait", st)
	}
	pb, ok := w.pl.ledger.Commitment("ns/b")
	if !ok || pb.Within.Value != "A" {
		t.Fatalf("b pinned = %v within %v, want zone A", ok, pb.Within)
	}
	var kept []*v1.Node
	gone := false
	for _, n := range w.nodes {
		if !gone && n.Labels[testKey] == pb.Domain && n.Labels[testZoneKey] == "A" {
			gone = true // one of b's nodes is deleted
			continue
		}
		kept = append(kept, n)
	}
	w.nodes = kept
	w.resnap(assumed(a[0], cands[0]))

	cb, st := w.preFilter(b[0])
	if st.IsSuccess() {
		got := cb.res.NodeNames.UnsortedList()
		t.Fatalf("b-0 PreFilter placed it on %v (zones %v), want it to wait for room in zone A", got, w.zoneOfNodes(got))
	}
	if pb, ok := w.pl.ledger.Commitment("ns/b"); ok && pb.Within.Value != "A" {
		t.Errorf("b re-pinned to %s within %v, want no pin outside zone A", pb.Domain, pb.Within)
	}
}

// A partner parked because no group domain had room is retried when a node's group-key
// label changes, even on a node without the gang's own key.
func TestPartnerGroupHintOnGroupKey(t *testing.T) {
	a := members("a", 1)
	w := newWorld(t, groupArgs(), nil, a, partnerPG("a", 1, "grp", "2", testZoneKey))
	old := testNode("n", "", 1)
	cur := old.DeepCopy()
	cur.Labels[testZoneKey] = "A"
	if h, err := w.pl.hintNodeChange(klog.Background(), a[0], old, cur); err != nil || h != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", h, err)
	}
}
