package gangpack

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// How a partner placement group's commitments end: one partner's unwind, expiry or minMember
// change unwinds the group, a surplus member's failure unwinds nothing, and GC forgets the
// group records and waits nothing refers to.

// cycleOfPin returns a cycle state carrying the current pin of the pod's gang, as
// the pod's own cycle had it (for Unreserve).
func (w *world) cycleOfPin(p *v1.Pod) fwk.CycleState {
	w.t.Helper()
	key, _, _ := gang.Of(p)
	c, ok := w.pl.ledger.Commitment(key)
	if !ok {
		w.t.Fatalf("%s not pinned", key)
	}
	cs := framework.NewCycleState()
	cs.Write(plan.PinStateKey, &plan.Pin{Gang: gang.Info{Key: key, Namespace: p.Namespace, Name: p.Labels[PodGroupLabel]}, Domain: c.Domain, ID: c.ID})
	return cs
}

// Rule 4: one partner's rejection unwinds the whole group: the other's pin goes and its
// waiters are rejected.
func TestPartnerGroupUnwindCascades(t *testing.T) {
	metrics.Register()
	nodes := cliqueNodes("c4", "", 4)
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	before := groupCounter(t, metrics.GroupUnwound)
	waiters, st, nodeOf := w.formGroup([]*v1.Pod{a[0], a[1], b[0]})
	if st.Code() != fwk.Wait || len(waiters) != 3 {
		t.Fatalf("b-0 Permit %v, %d waiters; want Wait and 3", st, len(waiters))
	}
	// b-0 is rejected (its timeout): Unreserve unwinds b, and with it a.
	cb := w.cycleOfPin(b[0])
	w.pl.Unreserve(w.ctx, cb, b[0], nodeOf["b-0"])
	for _, name := range []string{"a-0", "a-1"} {
		if v := waiters[name].await(testWait); v != msg.Unwound("ns/a") {
			t.Errorf("%s: %q, want %q", name, v, msg.Unwound("ns/a"))
		}
	}
	if w.pl.ledger.Stats().Pins != 0 {
		t.Errorf("%d pins left, want 0", w.pl.ledger.Stats().Pins)
	}
	if got := groupCounter(t, metrics.GroupUnwound) - before; got != 1 {
		t.Errorf("placement_group_total{unwound} moved by %v, want 1", got)
	}
}

// Rule 4: a partner's hold reaching its timeout unwinds the whole group, the committed
// partner included (its waiters are rejected).
func TestPartnerGroupExpiryCascades(t *testing.T) {
	nodes := cliqueNodes("c4", "", 4)
	a, b := members("a", 2), members("b", 2)
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	var timers []func()
	w.after = func(_ time.Duration, f func()) func() { timers = append(timers, f); return func() {} }
	waiters, st, _ := w.formGroup(a)
	if st.Code() != fwk.Wait || len(waiters) != 2 {
		t.Fatalf("a-1 Permit %v with %d waiters; want Wait (b forming) and 2", st, len(waiters))
	}
	if len(timers) != 2 {
		t.Fatalf("%d hold timers, want one per partner", len(timers))
	}
	for _, f := range timers { // a is committed (left alone), b expires and takes a with it
		f()
	}
	for _, name := range []string{"a-0", "a-1"} {
		if v := waiters[name].await(testWait); v != msg.Unwound("ns/a") {
			t.Errorf("%s: %q, want %q", name, v, msg.Unwound("ns/a"))
		}
	}
	if w.pl.ledger.Stats().Pins != 0 {
		t.Errorf("%d pins left, want 0", w.pl.ledger.Stats().Pins)
	}
}

// Rule 4 with a minMember change: a committed partner whose member waits at Permit for the
// rest of its group is unwound when its minMember grows, so the group's completion cannot
// admit it with fewer members than the new size; the partner forming with it goes too.
func TestPartnerGroupMinMemberRaisedUnwindsCommittedPartner(t *testing.T) {
	nodes := cliqueNodes("c3", "", 3)
	a, b := members("a", 2), members("b", 1)
	old := partnerPG("a", 1, "grp", "2", "")
	w := newWorld(t, groupArgs(), nodes, slices.Concat(a, b), old, partnerPG("b", 1, "grp", "2", ""))
	waiters, st, _ := w.formGroup(a[:1])
	if st.Code() != fwk.Wait || len(waiters) != 1 {
		t.Fatalf("a-0 Permit %v with %d waiters; want Wait (b not placed) and 1", st, len(waiters))
	}
	grown := old.DeepCopy()
	grown.Spec.MinMember = 2
	if err := w.pgs.Update(grown); err != nil {
		t.Fatal(err)
	}
	w.pl.ledger.OnPodGroupChange(old, grown)
	if v := waiters["a-0"].await(testWait); v != msg.Unwound("ns/a") {
		t.Fatalf("a-0: %q, want %q", v, msg.Unwound("ns/a"))
	}
	if w.pl.ledger.Stats().Pins != 0 {
		t.Errorf("%d pins left, want 0", w.pl.ledger.Stats().Pins)
	}
}

// A partner pinned by adoption joins its group's record: when its attempt is unwound, the
// partner placed next to it is unwound too.
func TestPartnerGroupAdoptedPartnerCascades(t *testing.T) {
	a, b := members("a", 2), members("b", 2)
	b[0].Spec.NodeName = "a-r1-0" // b lost its other member's node in a restart
	w := newWorld(t, groupArgs(), zonesWithRepeatedRacks()[:8], slices.Concat(a, b),
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	w.mustPin(b[1]) // adopts rack r1 in zone A, one member still to place
	pb, ok := w.pl.ledger.Commitment("ns/b")
	if !ok || !pb.Forming() {
		t.Fatalf("b pin %+v (%v), want a forming adoption", pb, ok)
	}
	w.mustPin(a[0]) // the group is anchored by b: a is placed in zone A
	if _, ok := w.pl.ledger.Commitment("ns/a"); !ok {
		t.Fatal("a not pinned")
	}
	w.pl.Unreserve(w.ctx, w.cycleOfPin(b[1]), b[1], "a-r1-1")
	if pa, ok := w.pl.ledger.Commitment("ns/a"); ok {
		t.Errorf("a still pinned (%+v) after its adopted partner b was unwound", pa)
	}
}

// A surplus member (its gang committed before it was planned) that fails unwinds nothing:
// neither its gang's committed pin nor the forming partner, whose waiter stays.
func TestPartnerGroupSurplusFailureKeepsGroup(t *testing.T) {
	for _, how := range []string{"Unreserve", "PostFilter"} {
		t.Run(how, func(t *testing.T) {
			a, b := members("a", 3), members("b", 2)
			w := newWorld(t, groupArgs(), cliqueNodes("c6", "", 6), slices.Concat(a, b),
				partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
			waiters, st, nodeOf := w.formGroup([]*v1.Pod{a[0], a[1], b[0]})
			if st.Code() != fwk.Wait || len(waiters) != 3 {
				t.Fatalf("b-0 Permit %v, %d waiters; want Wait and 3", st, len(waiters))
			}
			if pa, _ := w.pl.ledger.Commitment("ns/a"); pa.Forming() {
				t.Fatalf("a pin %+v, want committed", pa)
			}
			used := map[string]bool{}
			for _, n := range nodeOf {
				used[n] = true
			}
			w.resnap(assumed(a[0], nodeOf["a-0"]), assumed(a[1], nodeOf["a-1"]), assumed(b[0], nodeOf["b-0"]))
			c := w.mustPin(a[2])
			node := ""
			for _, n := range sets.List(c.res.NodeNames) {
				if !used[n] {
					node = n
					break
				}
			}
			if how == "Unreserve" {
				if st := c.reserveOn(node); st.Code() != fwk.Wait {
					t.Fatalf("a-2 Permit = %v, want Wait (b forms)", st)
				}
				w.pl.Unreserve(w.ctx, c.cs, a[2], node)
			} else {
				w.pl.PostFilter(w.ctx, c.cs, a[2], nil)
			}
			for _, gang := range []string{"ns/a", "ns/b"} {
				if _, ok := w.pl.ledger.Commitment(gang); !ok {
					t.Errorf("%s unpinned by the surplus member's %s", gang, how)
				}
			}
			if v := waiters["b-0"].now(); v != "" {
				t.Errorf("b-0 decided %q, want still waiting", v)
			}
		})
	}
}

// GC forgets waiting groups without pods or PodGroups; it keeps the rest. (Group records
// whose attempts are all gone: the ledger's TestPruneGroupsForgetsDeadRecords.)
func TestPartnerGroupsPruned(t *testing.T) {
	a := members("a", 2)
	w := newWorld(t, groupArgs(), cliqueNodes("c4", "", 4), a, partnerPG("a", 2, "grp", "2", ""))
	w.pl.ledger.GroupWaits("ns/grp", plan.GroupIncomplete)
	w.pl.ledger.GroupWaits("ns/gone", plan.GroupIncomplete)
	_, st := w.preFilter(a[0]) // waits for b: a is not pinned, nothing recorded
	if st.IsSuccess() {
		t.Fatal("a planned without its partner")
	}
	w.pl.pruneGroups()
	got := w.pl.ledger.Stats().WaitingGroups
	if len(got) != 1 || got[0] != "ns/grp" {
		t.Errorf("waiting groups %v, want [ns/grp]", got)
	}
}
