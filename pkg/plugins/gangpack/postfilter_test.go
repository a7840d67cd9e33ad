package gangpack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// PostFilter never returns a status with an empty reason: kube-scheduler joins the reasons
// into the pod's message with ", ", and an empty one leaves a dangling separator.
func TestPostFilterNoEmptyReason(t *testing.T) {
	hiGang := func() []*v1.Pod {
		return []*v1.Pod{prio(gangMember("hi-0", "hi", 1), 10), prio(gangMember("hi-1", "hi", 1), 10)}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) *fwk.Status
	}{
		{"gang without room, preemption off", func(t *testing.T) *fwk.Status {
			hi := hiGang()
			w := newPreemptWorld(t, twoDomains(), append(gangOn("low", 1, "a1", "a2", "b1", "b2"), hi...), podGroup("low", 4), podGroup("hi", 2))
			w.pl.args.Preemption = false
			_, st := w.postFilter(hi[0])
			return st
		}},
		{"gang kept out by a hold only", func(t *testing.T) *fwk.Status {
			hi := hiGang()
			other := []*v1.Pod{prio(gangMember("other-0", "other", 1), 20), prio(gangMember("other-1", "other", 1), 20)}
			w := newPreemptWorld(t, twoDomains(), append(append(gangOn("low", 1, "b1", "b2"), hi...), other...),
				podGroup("low", 2), podGroup("hi", 2), podGroup("other", 2))
			w.mustPin(other[0])
			_, st := w.postFilter(hi[0])
			return st
		}},
		{"standalone pod with room elsewhere", func(t *testing.T) *fwk.Status {
			solo := prio(standalone("solo"), 10)
			w := newPreemptWorld(t, []*v1.Node{testNode("a1", "a", 1), testNode("a2", "a", 1)},
				[]*v1.Pod{placedOn(prio(standalone("low"), 1), "a1"), solo})
			_, st := w.pl.PostFilter(w.ctx, framework.NewCycleState(), solo, filteredOut())
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.run(t)
			if st.Code() != fwk.Unschedulable {
				t.Fatalf("PostFilter = %v, want Unschedulable", st)
			}
			if slices.Contains(st.Reasons(), "") {
				t.Fatalf("PostFilter status has an empty reason: %q", st.Reasons())
			}
		})
	}
}

// With both gangs' room reserved, a third gang waits with the reserved message, and its
// wait names the reserving gangs and their room.
func TestThirdGangWaitsForReservedRoom(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 8; i++ {
		nodes = append(nodes, testNode(fmt.Sprintf("a%d", i), "a", 1))
	}
	x0, y0, z0 := gangMember("x-0", "x", 1), gangMember("y-0", "y", 1), gangMember("z-0", "z", 1)
	var pods []*v1.Pod
	for _, g := range []string{"x", "y", "z"} {
		for i := 0; i < 4; i++ {
			pods = append(pods, gangMember(fmt.Sprintf("%s-%d", g, i), g, 1))
		}
	}
	w := newWorld(t, nil, nodes, pods, podGroup("x", 4), podGroup("y", 4), podGroup("z", 4))
	w.mustPin(x0)
	w.mustPin(y0)
	c, st := w.preFilter(z0)
	if st.Code() != fwk.Unschedulable || st.Message() != msg.NoRoomReserved("ns/z") {
		t.Fatalf("PreFilter(z-0) = %v, want %q", st, msg.NoRoomReserved("ns/z"))
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(st)
	_, pst := w.pl.PostFilter(w.ctx, c.cs, z0, statuses)
	want := "Room is reserved for forming gangs: ns/x reserves 4 members on 4 nodes of a; ns/y reserves 4 members on 4 nodes of a."
	if pst.Message() != want {
		t.Fatalf("PostFilter(z-0) = %q, want %q", pst.Message(), want)
	}
}
