package plan

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// gpuMember is a member of ns/g asking for gpus GPUs.
func gpuMember(name string, gpus string) *v1.Pod {
	return st.MakePod().Namespace("ns").Name(name).UID(name).Label(gang.Label, "g").
		Req(map[v1.ResourceName]string{"nvidia.com/gpu": gpus}).Obj()
}

// chooseNodes: domain a has two 8-GPU nodes, b three, c one. A gang of three 4-GPU members
// has room for 4 members in a, 6 in b and 2 in c.
func chooseNodes() []*v1.Node {
	return []*v1.Node{
		testNode("a0", "a", 8), testNode("a1", "a", 8),
		testNode("b0", "b", 8), testNode("b1", "b", 8), testNode("b2", "b", 8),
		testNode("c0", "c", 8),
	}
}

func domains(ds ...string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, d := range ds {
		out[d] = struct{}{}
	}
	return out
}

// chooseCase is one planning of ns/g (three 4-GPU members) over chooseNodes.
type chooseCase struct {
	name    string
	ledger  fakeLedger
	holdCap int64
	// want: the chosen domain and candidates, or the status code and message.
	domain     string
	candidates []string
	code       fwk.Code
	msg        string
	calls      []string
}

var chooseCases = []chooseCase{{
	name:       "best fit: the least room that fits the gang",
	domain:     "a",
	candidates: []string{"a0", "a1"},
	calls:      []string{"Choose ns/g need=3"},
}, {
	name:       "a failed domain is left out",
	ledger:     fakeLedger{failed: domains("a")},
	domain:     "b",
	candidates: []string{"b0", "b1", "b2"},
	calls:      []string{"Choose ns/g need=3"},
}, {
	name:       "every fitting domain failed: the lap wraps, a resting domain stays out",
	ledger:     fakeLedger{failed: domains("a", "b"), resting: domains("a")},
	domain:     "b",
	candidates: []string{"b0", "b1", "b2"},
	calls:      []string{"Choose ns/g need=3", "WrapFailed ns/g", "Choose ns/g need=3"},
}, {
	name: "another gang's reservation leaves a too little room",
	ledger: fakeLedger{others: map[string]placement.Reserved{
		"a0": {Resources: topology.Resources{"nvidia.com/gpu": 8}, Pods: 2}, // a keeps room for 1
		"a1": {Resources: topology.Resources{"nvidia.com/gpu": 4}, Pods: 1},
	}},
	domain:     "b",
	candidates: []string{"b0", "b1", "b2"},
	calls:      []string{"Choose ns/g need=3"},
}, {
	name: "another gang's reservation leaves room for members on some nodes only",
	ledger: fakeLedger{others: map[string]placement.Reserved{
		"b0": {Resources: topology.Resources{"nvidia.com/gpu": 8}, Pods: 2},
	}, failed: domains("a")},
	domain:     "b",
	candidates: []string{"b1", "b2"},
	calls:      []string{"Choose ns/g need=3"},
}, {
	name:    "the namespace is at its hold cap: the pod parks until a hold ends",
	ledger:  fakeLedger{forming: 1},
	holdCap: 1,
	code:    fwk.Unschedulable,
	msg:     msg.HoldCap("ns", 1),
	calls:   []string{"ParkBlocked ns/g-0 1"},
}, {
	name:       "under the hold cap the gang pins",
	ledger:     fakeLedger{forming: 1},
	holdCap:    2,
	domain:     "a",
	candidates: []string{"a0", "a1"},
	calls:      []string{"Choose ns/g need=3"},
}, {
	name:   "failed and resting everywhere it fits: the gang waits for the resting domain",
	ledger: fakeLedger{failed: domains("a", "b"), resting: domains("a", "b")},
	code:   fwk.Unschedulable,
	msg:    msg.NoRoomResting("ns/g", "a"),
	calls:  []string{"Choose ns/g need=3", "WrapFailed ns/g", "Choose ns/g need=3"},
}}

// choose of an unpinned gang without placed members, on a snapshot and a fake ledger whose
// pins are a real pin store: best fit over the domains with room, failed domains left out
// until the lap wraps (resting ones stay out), other gangs' reservations set aside, and the
// namespace's hold cap.
func TestChoose(t *testing.T) {
	for _, tt := range chooseCases {
		t.Run(tt.name, func(t *testing.T) {
			l := &tt.ledger
			l.store = placement.NewStore()
			pod := gpuMember("g-0", "4")
			p := newTestPlanner(t, l, chooseNodes(), pod, gpuMember("g-1", "4"), gpuMember("g-2", "4"))
			if tt.holdCap > 0 {
				p.pl.args.MaxHoldsPerNamespace = &tt.holdCap
			}
			p = p.pl.newCycle(p.logger, pod, p.info, p.all, p.pl.reading(pod, p.info, p.all), l)
			if st := p.gate(); st != nil {
				t.Fatalf("gate: %v", st)
			}
			l.calls = nil
			cs := framework.NewCycleState()
			res, status := p.choose(cs, nil)
			if tt.domain == "" {
				if status.Code() != tt.code || status.Message() != tt.msg {
					t.Errorf("choose() = %v, want %v %q", status, tt.code, tt.msg)
				}
				if res != nil || ReadPin(cs) != nil {
					t.Errorf("choose() narrowed the cycle (%v) while the pod waits", res)
				}
			} else {
				if !status.IsSuccess() {
					t.Fatalf("choose() = %v, want domain %s", status, tt.domain)
				}
				pin := ReadPin(cs)
				if pin == nil || pin.Domain != tt.domain {
					t.Fatalf("cycle pin %+v, want domain %s", pin, tt.domain)
				}
				if want := sets.New(tt.candidates...); !res.NodeNames.Equal(want) || !pin.Candidates.Equal(want) {
					t.Errorf("candidates %v (pin %v), want %v", sets.List(res.NodeNames), sets.List(pin.Candidates), tt.candidates)
				}
				if c, ok := l.store.Get("ns/g"); !ok || c.Domain != tt.domain || c.Remaining != 3 {
					t.Errorf("store pin %+v (%v), want domain %s, 3 remaining", c, ok, tt.domain)
				}
			}
			if !slices.Equal(l.calls, tt.calls) {
				t.Errorf("ledger calls %q, want %q", l.calls, tt.calls)
			}
		})
	}
}
