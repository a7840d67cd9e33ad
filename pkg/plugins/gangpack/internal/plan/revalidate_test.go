package plan

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// pinIn is the gang's pin in domain under attempt 7, planned for minMember 3, with remaining
// members still to come (0: committed).
func pinIn(domain string, remaining int) placement.Commitment {
	return placement.Commitment{Gang: testGang, Key: testKey, Domain: domain, Owner: testUID, ID: 7,
		Remaining: remaining, MinMember: 3}
}

// terminating marks a pod as being deleted.
func terminating(p *v1.Pod) *v1.Pod {
	p.DeletionTimestamp = &metav1.Time{}
	return p
}

// staleDrop is the decision that drops a pin in domain as stale, for cause.
func staleDrop(cause, domain string) pinDecision {
	return pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: cause}, msg: msg.StaleReleased(domain, testGang)}
}

// withBlock is c pinned inside group domain x of example.com/block.
func withBlock(c placement.Commitment) placement.Commitment {
	c.Within = placement.DomainRef{Key: "example.com/block", Value: "x"}
	return c
}

// A checkPin case is the pin, the gang's other members (on their node or not) and what the
// ledger knows of waiters.
type checkPinCase struct {
	name     string
	nodes    []*v1.Node // testNodes() when nil
	pin      placement.Commitment
	members  []*v1.Pod
	attempts map[string]uint64 // pod → attempt it waits at Permit under
	reserved map[string]string // pod → node it is reserved on
	want     pinDecision
}

// checkPinCases are one row per decision checkPin takes, and the rows that keep a pin close
// to each.
var checkPinCases = []checkPinCase{{
	name:    "committed gang with all members placed keeps its pin",
	pin:     pinIn("a", 0),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "a0"), member("g-3", "a1")},
	want:    pinDecision{keep: true},
}, {
	name:    "forming gang with placed plus remaining at minMember keeps its pin",
	pin:     pinIn("a", 2),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "")},
	want:    pinDecision{keep: true},
}, {
	name:    "a pin owned by a previous PodGroup instance is dropped",
	pin:     func() placement.Commitment { c := pinIn("a", 2); c.Owner = "old-uid"; return c }(),
	members: []*v1.Pod{member("g-1", "a0")},
	want: pinDecision{Drop: gang.Drop{Cause: gang.CauseOwnerChange, Always: true, ClearOwner: true},
		msg: msg.OwnerReleased(testGang)},
}, {
	name:    "a pin under another topology key is dropped for the gang's key",
	pin:     func() placement.Commitment { c := pinIn("a", 2); c.Key = "example.com/rack"; return c }(),
	members: []*v1.Pod{member("g-1", "a0")},
	want: pinDecision{Drop: gang.Drop{Cause: gang.CauseTopologyChange, Always: true, NewKey: testKey},
		msg: msg.TopologyReleased(testGang)},
}, {
	name:    "a forming pin planned for another minMember is dropped",
	pin:     func() placement.Commitment { c := pinIn("a", 2); c.MinMember = 2; return c }(),
	members: []*v1.Pod{member("g-1", "a0")},
	want:    pinDecision{Drop: gang.Drop{Cause: gang.CauseMinMemberChange}, msg: msg.MinMemberReleased(testGang)},
}, {
	name:    "a committed pin planned for another minMember is kept",
	pin:     func() placement.Commitment { c := pinIn("a", 0); c.MinMember = 2; return c }(),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "a0"), member("g-3", "a1")},
	want:    pinDecision{keep: true},
}, {
	name:    "a member placed outside the pinned domain drops the pin",
	pin:     pinIn("a", 2),
	members: []*v1.Pod{member("g-1", "b0")},
	want:    staleDrop(staleMemberMoved, "a"),
}, {
	name:    "a member placed outside the partner's group domain drops the pin",
	pin:     withBlock(pinIn("a", 2)),
	members: []*v1.Pod{member("g-1", "a0")},
	want:    staleDrop(staleMemberMoved, "a"),
}, {
	name:    "members inside the partner's group domain keep the pin",
	nodes:   blockNodes("x"),
	pin:     withBlock(pinIn("a", 2)),
	members: []*v1.Pod{member("g-1", "a0")},
	want:    pinDecision{keep: true},
}, {
	name:     "a member waiting under the attempt on a deleted node drops the pin",
	pin:      pinIn("a", 1),
	members:  []*v1.Pod{member("g-1", "a0"), member("g-2", "")},
	attempts: map[string]uint64{"g-2": 7},
	reserved: map[string]string{"g-2": "gone"},
	want:     staleDrop(staleMemberMoved, "a"),
}, {
	name:     "a member waiting under an earlier attempt on a deleted node does not",
	pin:      pinIn("a", 1),
	members:  []*v1.Pod{member("g-1", "a0"), member("g-2", "")},
	attempts: map[string]uint64{"g-2": 6},
	reserved: map[string]string{"g-2": "gone"},
	want:     pinDecision{keep: true, remaining: 2},
}, {
	name:    "a committed gang that lost a member forms again from the members still placed",
	pin:     pinIn("a", 0),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "a1")},
	want:    pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin}},
}, {
	name:    "a Terminating member is not a placed one",
	pin:     pinIn("a", 0),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "a1"), terminating(member("g-3", "a1"))},
	want:    pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin}},
}, {
	name:    "a committed gang with no member placed is counted as emptied",
	pin:     pinIn("a", 0),
	members: []*v1.Pod{member("g-1", ""), member("g-2", "")},
	want:    pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleCommittedEmpty}},
}, {
	name:    "a forming gang that lost a placed member raises remaining to what it needs",
	pin:     pinIn("a", 1),
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "")},
	want:    pinDecision{keep: true, remaining: 2},
}}

// checkPin takes one decision per situation of the gang's pin, and changes nothing.
func TestCheckPin(t *testing.T) {
	for _, tt := range checkPinCases {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLedger{pin: &tt.pin, attempts: uids(tt.attempts), reserved: uids(tt.reserved)}
			nodes := tt.nodes
			if nodes == nil {
				nodes = testNodes()
			}
			p := newTestPlanner(t, l, nodes, member("g-0", ""), tt.members...)
			if got := p.checkPin(tt.pin); got != tt.want {
				t.Errorf("checkPin() = %+v, want %+v", got, tt.want)
			}
			if len(l.calls) != 0 {
				t.Errorf("checkPin() changed the ledger: %q", l.calls)
			}
		})
	}
}

// blockNodes are testNodes in group domain block of example.com/block.
func blockNodes(block string) []*v1.Node {
	nodes := testNodes()
	for _, n := range nodes {
		n.Labels["example.com/block"] = block
	}
	return nodes
}

// uids keys a per-pod map by the test members' UIDs (their names).
func uids[V any](byName map[string]V) map[types.UID]V {
	out := make(map[types.UID]V, len(byName))
	for name, v := range byName {
		out[types.UID(name)] = v
	}
	return out
}

// revalidate carries checkPin's decision out on the ledger: a raised remaining regrows the
// pin, a drop drops it, and the cycle ends when members waiting under it were rejected.
func TestRevalidateCarriesOutTheDecision(t *testing.T) {
	tests := []struct {
		name            string
		pin             placement.Commitment
		members         []*v1.Pod
		waitersRejected bool
		wantKept        int // the kept pin's remaining; -1: no pin kept
		wantStatus      string
		wantCalls       []string
	}{{
		name:     "kept as it is",
		pin:      pinIn("a", 2),
		members:  []*v1.Pod{member("g-1", "a0")},
		wantKept: 2,
	}, {
		name:      "kept with remaining raised",
		pin:       pinIn("a", 1),
		members:   []*v1.Pod{member("g-1", "a0")},
		wantKept:  2,
		wantCalls: []string{"Regrow ns/g 7 remaining=2"},
	}, {
		name:      "dropped with nobody waiting",
		pin:       pinIn("a", 2),
		members:   []*v1.Pod{member("g-1", "b0")},
		wantKept:  -1,
		wantCalls: []string{"Drop ns/g 7 {Cause:stale_pin Always:false Stale:member_moved NewKey: ClearOwner:false}"},
	}, {
		name:            "dropped with waiters rejected",
		pin:             pinIn("a", 2),
		members:         []*v1.Pod{member("g-1", "b0")},
		waitersRejected: true,
		wantKept:        -1,
		wantStatus:      msg.StaleReleased("a", testGang),
		wantCalls:       []string{"Drop ns/g 7 {Cause:stale_pin Always:false Stale:member_moved NewKey: ClearOwner:false}"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLedger{pin: &tt.pin, waitersRejected: tt.waitersRejected}
			p := newTestPlanner(t, l, testNodes(), member("g-0", ""), tt.members...)
			kept, status := p.revalidate(l.pin)
			switch {
			case tt.wantKept < 0 && kept != nil:
				t.Errorf("revalidate() kept %+v, want it dropped", *kept)
			case tt.wantKept >= 0 && (kept == nil || kept.Remaining != tt.wantKept):
				t.Errorf("revalidate() kept %+v, want remaining %d", kept, tt.wantKept)
			}
			if got := status.Message(); got != tt.wantStatus || (status != nil && status.Code() != fwk.Unschedulable) {
				t.Errorf("revalidate() status %v, want Unschedulable %q", status, tt.wantStatus)
			}
			if !slices.Equal(l.calls, tt.wantCalls) {
				t.Errorf("ledger calls %q, want %q", l.calls, tt.wantCalls)
			}
		})
	}
}

// staleByRoom drops a pin whose domain vanished, or which no longer has room for a gang with
// nothing placed there, unless its room is still coming from preemption victims.
func TestStaleByRoom(t *testing.T) {
	plan := func(room int, nodes ...string) map[string]*topology.DomainPlan {
		return map[string]*topology.DomainPlan{"a": {Domain: "a", Room: room, Nodes: nodes}}
	}
	tests := []struct {
		name      string
		plans     map[string]*topology.DomainPlan
		members   []*v1.Pod
		awaiting  bool // the gang preempted in the domain and its victims still terminate
		want      pinDecision
		wantStale bool
	}{{
		name:      "the pinned domain has no plan",
		plans:     map[string]*topology.DomainPlan{},
		want:      pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleDomainGone}, msg: msg.StaleReleased("a", testGang)},
		wantStale: true,
	}, {
		name:      "the pinned domain has no nodes",
		plans:     plan(3),
		want:      pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleDomainGone}, msg: msg.StaleReleased("a", testGang)},
		wantStale: true,
	}, {
		name:      "nothing placed and too little room",
		plans:     plan(2, "a0", "a1"),
		members:   []*v1.Pod{member("g-1", ""), member("g-2", "")},
		want:      pinDecision{Drop: gang.Drop{Cause: gang.CauseStalePin, Stale: staleNoRoom}, msg: msg.StaleReleased("a", testGang)},
		wantStale: true,
	}, {
		name:     "too little room while the victims terminate",
		plans:    plan(2, "a0", "a1"),
		members:  []*v1.Pod{member("g-1", ""), member("g-2", "")},
		awaiting: true,
	}, {
		name:    "too little room with a member placed there",
		plans:   plan(0, "a0", "a1"),
		members: []*v1.Pod{member("g-1", "a0"), member("g-2", "")},
	}, {
		name:    "room for the gang",
		plans:   plan(3, "a0", "a1"),
		members: []*v1.Pod{member("g-1", ""), member("g-2", "")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLedger{}
			p := newTestPlanner(t, l, testNodes(), member("g-0", ""), tt.members...)
			p.need = max(p.info.MinMember-len(p.placed), 1)
			p.pl.victims = fakeVictims{awaiting: tt.awaiting}
			got, stale := p.staleByRoom(pinIn("a", 3-len(p.placed)), tt.plans)
			if got != tt.want || stale != tt.wantStale {
				t.Errorf("staleByRoom() = %+v, %v; want %+v, %v", got, stale, tt.want, tt.wantStale)
			}
		})
	}
}

// fakeVictims answers whether the gang's domain still waits for preemption victims.
type fakeVictims struct{ awaiting bool }

func (v fakeVictims) Awaiting(string, string) bool { return v.awaiting }
func (fakeVictims) WithProtected(_ string, o map[string]placement.Reserved, _ func() int32, _ time.Time) map[string]placement.Reserved {
	return o
}
func (fakeVictims) PreemptPriority(*v1.Pod) int32 { return 0 }
