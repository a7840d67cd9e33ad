package plan

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// follower requires pod affinity, under testKey, with a pod labelled role (a leader).
func follower(p *v1.Pod) *v1.Pod {
	p.Spec.Affinity = st.MakePod().PodAffinityExists("role", testKey, st.PodAffinityWithRequiredReq).Obj().Spec.Affinity
	return p
}

func leader(p *v1.Pod) *v1.Pod {
	p.Labels["role"] = "leader"
	return p
}

// spreadAnchor carries a hard topology spread constraint: it chooses the domain.
func spreadAnchor(p *v1.Pod) *v1.Pod {
	return st.MakePod().Namespace(p.Namespace).Name(p.Name).UID(string(p.UID)).Labels(p.Labels).Node(p.Spec.NodeName).
		SpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, nil, nil, nil, nil, nil).Obj()
}

func splitRefused(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.PlacementTotal.WithLabelValues(metrics.OutcomeSplitRefused))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// complete is the ledger call that wakes g's members once they all exist.
const complete = "MembersComplete ns/g except=g-0 trigger=" + metrics.TriggerTemplatesComplete

// A gate case is the member being scheduled, the gang's other members and what gate decides.
type gateCase struct {
	name    string
	pod     *v1.Pod // the member being scheduled; g-0 when nil
	members []*v1.Pod
	code    fwk.Code // of the status; Success: the gang may be planned
	msg     string
	calls   []string // on the ledger, when not a dry run
	refused float64  // split refusals counted, when not a dry run
}

// gateCases are one row per decision gate takes.
var gateCases = []gateCase{{
	name:    "members in two domains are refused",
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "b0")},
	code:    fwk.UnschedulableAndUnresolvable,
	msg:     msg.Split(testGang),
	refused: 1,
}, {
	name:    "a placed member on a node without the label is refused",
	members: []*v1.Pod{member("g-1", "a0"), member("g-2", "bare")},
	code:    fwk.UnschedulableAndUnresolvable,
	msg:     msg.Split(testGang),
	refused: 1,
}, {
	name:    "too few members wait for the rest",
	members: []*v1.Pod{member("g-1", "")},
	code:    fwk.Unschedulable,
	msg:     msg.Templates(testGang, 2, 3),
	calls:   []string{"MembersMissing ns/g"},
}, {
	name:    "placed members lower the count to wait for",
	members: []*v1.Pod{member("g-1", "a0")},
	code:    fwk.Unschedulable,
	msg:     msg.Templates(testGang, 1, 2),
	calls:   []string{"MembersMissing ns/g"},
}, {
	name:    "a Terminating member is no template",
	members: []*v1.Pod{member("g-1", ""), terminating(member("g-2", ""))},
	code:    fwk.Unschedulable,
	msg:     msg.Templates(testGang, 2, 3),
	calls:   []string{"MembersMissing ns/g"},
}, {
	name:    "members complete wake the gang",
	members: []*v1.Pod{member("g-1", ""), member("g-2", "")},
	calls:   []string{complete},
}, {
	name:    "a follower waits for its unplaced leader",
	pod:     follower(member("g-0", "")),
	members: []*v1.Pod{member("g-1", ""), leader(member("g-2", ""))},
	code:    fwk.Unschedulable,
	msg:     msg.SiblingWait("ns", "g-2"),
	calls:   []string{complete, "Await ns/g-2 by ns/g-0"},
}, {
	name:    "a follower whose leader is placed goes on",
	pod:     follower(member("g-0", "")),
	members: []*v1.Pod{member("g-1", ""), leader(member("g-2", "a0"))},
	calls:   []string{complete},
}, {
	name:    "a member waits for the gang's spread anchor",
	members: []*v1.Pod{spreadAnchor(member("g-1", "")), member("g-2", "")},
	code:    fwk.Unschedulable,
	msg:     msg.AnchorWait("ns", "g-1"),
	calls:   []string{complete, "Await ns/g-1 by ns/g-0"},
}, {
	name:    "a spread anchor does not wait for another",
	pod:     spreadAnchor(member("g-0", "")),
	members: []*v1.Pod{spreadAnchor(member("g-1", "")), member("g-2", "")},
	calls:   []string{complete},
}}

// gate parks the pod while its gang may not be planned, and records on the ledger what wakes
// it (PreFilter's admit also counts a split); a dry run (preemption asking whether the gang
// lacks room, with NoEffects) decides the same and records nothing.
func TestGate(t *testing.T) {
	metrics.Register()
	for _, tt := range gateCases {
		for _, dryRun := range []bool{false, true} {
			name := tt.name
			if dryRun {
				name += " (dry run)"
			}
			t.Run(name, func(t *testing.T) {
				pod := tt.pod
				if pod == nil {
					pod = member("g-0", "")
				}
				nodes := append(testNodes(), testNode("bare", "", 8))
				l := &fakeLedger{}
				p := newTestPlanner(t, l, nodes, pod, tt.members...)
				before := splitRefused(t)
				gate := p.admit
				if dryRun {
					p.fx, gate = NoEffects{}, p.gate
				}
				status := gate()
				if status.Code() != tt.code || status.Message() != tt.msg {
					t.Errorf("gate() = %v, want %v %q", status, tt.code, tt.msg)
				}
				wantCalls, wantRefused := tt.calls, tt.refused
				if dryRun {
					wantCalls, wantRefused = nil, 0
				}
				if !slices.Equal(l.calls, wantCalls) {
					t.Errorf("ledger calls %q, want %q", l.calls, wantCalls)
				}
				if got := splitRefused(t) - before; got != wantRefused {
					t.Errorf("%v split refusals counted, want %v", got, wantRefused)
				}
			})
		}
	}
}
