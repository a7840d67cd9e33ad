package gangpack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// A deletion that frees room queues one member per waiting gang without a pin (the first
// live, unbound, ungated member by name), every member of a pinned gang, standalone pods, and
// every member when the deletion is of the gang's own pod.
func TestDeleteHintQueuesOneMemberPerWaitingGang(t *testing.T) {
	bound := standalone("fill")
	bound.Spec.NodeName = "a0"
	unbound := standalone("pending")
	cases := []struct {
		name    string
		gated   string // member created with a scheduling gate
		pin     bool   // the gang holds a pin
		deleted *v1.Pod
		want    map[string]fwk.QueueingHint
	}{
		{"room freed: the first member stands for the gang", "", false, bound,
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.QueueSkip, "g-2": fwk.QueueSkip, "solo": fwk.Queue}},
		{"a gated member does not stand for the gang", "g-0", false, bound,
			map[string]fwk.QueueingHint{"g-1": fwk.Queue, "g-2": fwk.QueueSkip}},
		{"a pinned gang: every member", "", true, bound,
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.Queue, "g-2": fwk.Queue}},
		{"no room freed: nobody", "", false, unbound,
			map[string]fwk.QueueingHint{"g-0": fwk.QueueSkip, "g-1": fwk.QueueSkip, "solo": fwk.QueueSkip}},
		{"a member of the gang deleted: every member", "", false, gangMember("g-9", "g", 1),
			map[string]fwk.QueueingHint{"g-0": fwk.Queue, "g-1": fwk.Queue, "g-2": fwk.Queue}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[string]*v1.Pod{"solo": standalone("solo")}
			var all []*v1.Pod
			for _, name := range []string{"g-2", "g-0", "g-1"} {
				p := gangMember(name, "g", 1)
				if name == tc.gated {
					p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/later"}}
				}
				pods[name] = p
				all = append(all, p)
			}
			all = append(all, pods["solo"])
			w := newWorld(t, nil, []*v1.Node{testNode("a0", "a", 4)}, all, podGroup("g", 3))
			if tc.pin {
				w.mustPin(pods["g-1"])
			}
			for name, want := range tc.want {
				got, err := podHint(true, w.pl.freesRoomFor)(klog.Background(), pods[name], tc.deleted, nil)
				if err != nil || got != want {
					t.Errorf("hint for %s = %v, %v; want %v", name, got, err, want)
				}
			}
		})
	}
}
