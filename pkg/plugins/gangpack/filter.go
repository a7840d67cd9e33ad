package gangpack

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Filter enforces the pinned domain (and a partner's group domain) and the planned candidates
// for pinned members, and the reservations for everyone: a pod may use a node only when it fits
// the room left there outside the other forming gangs' reservations (a pinned member of a
// committed gang, placed beyond minMember, included). Messages carry no per-node numbers so
// the framework aggregates them.
func (pl *GangPack) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node not found")
	}
	logger := klog.FromContext(ctx)
	pin := plan.ReadPin(cs)
	if pin != nil && node.Labels[pin.Gang.TopologyKey] != pin.Domain {
		logger.V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "outside_domain", "domain", pin.Domain)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.OutsideDomain(pin.Domain))
	}
	if w := pinWithin(pin); w.Key != "" && node.Labels[w.Key] != w.Value {
		logger.V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "outside_group_domain", "domain", w.Value)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.OutsideGroupDomain(w.Value))
	}
	if st := pl.filterRoom(ctx, logger, cs, pod, pin, ni); !st.IsSuccess() {
		return st
	}
	if !plannedCandidate(cs, pin, node.Name) {
		logger.V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "not_candidate")
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.NotCandidate)
	}
	return nil
}

// filterRoom refuses nodes with a binding in doubt and nodes where the pod does not fit the
// room left outside other forming gangs' reservations.
func (pl *GangPack) filterRoom(ctx context.Context, logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, pin *plan.Pin, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	own := ""
	if pin != nil {
		own = pin.Gang.Key
	}
	generation := pl.ledger.Generation()
	if pl.ledger.DoubtBlocks(node.Name, pod.UID, time.Now()) {
		pl.ledger.ParkBlocked(logger, pod, generation)
		return fwk.NewStatus(fwk.Unschedulable, msg.BindInDoubt)
	}
	reserved := pl.ledger.ReservedOn(node.Name, own)
	if len(reserved.Gangs) == 0 {
		return nil
	}
	free, freePods := withNominatedReserved(ni, reserved)
	if reserved.Leaves(free, freePods, requestOf(cs, pod)) {
		return pl.filterDevices(ctx, cs, pod, node, reserved.Gangs, own)
	}
	// The pod is parked once, by PostFilter, if no node takes it: parking here, once per
	// refused node, woke every parked pod again whenever room had been given back meanwhile.
	logger.V(4).Info("gangpack.Filter.reject", "pod", klog.KObj(pod), "node", node.Name, "reason", "reserved", "heldBy", reserved.Gangs)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.NodeReserved)
}

// withNominatedReserved returns the node's free room (gang.NodeFreeAll) with the room given
// back of the nominated pods kube-scheduler's Filter added to the node that a reservation
// there already sets aside. Filter's first pass adds every pending pod of equal or higher
// priority nominated to the node (framework.go:1195-1217 in v1.35.4): a member of a gang
// reserving room on that node (a gang resumed from its nominations, or a preemptor's gang
// holding the room its victims free) would otherwise count twice, once as a pod and once in
// the reservation. Never more than the reservation holds is given back.
func withNominatedReserved(ni fwk.NodeInfo, r placement.Reserved) (topology.Resources, int64) {
	room, pods := gang.NodeFreeAll(ni)
	var back topology.Resources
	var n int64
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		if p.Spec.NodeName != "" {
			continue
		}
		key, _, member := gang.Of(p)
		if _, reserving := slices.BinarySearch(r.Gangs, key); !member || !reserving {
			continue
		}
		if back == nil {
			back = topology.Resources{}
		}
		for name, q := range gang.Request(p) {
			back[name] += q
		}
		n++
	}
	if n == 0 {
		return room, pods
	}
	for name, q := range back {
		room[name] += min(q, r.Resources[name])
	}
	return room, pods + min(n, r.Pods)
}

// plannedCandidate reports whether the node is among the candidates PreFilter narrowed the
// cycle to (a pinned member's, or a spread anchor's deferred plan); true without narrowing.
// kube-scheduler tries a pod's nominated node with Filter alone, ignoring the PreFilter result.
func plannedCandidate(cs fwk.CycleState, pin *plan.Pin, node string) bool {
	if pin != nil {
		return pin.Candidates == nil || pin.Candidates.Has(node)
	}
	d := plan.ReadDeferred(cs)
	return d == nil || d.Candidates == nil || d.Candidates.Has(node)
}

// requestStateKey holds the pod's request in the planner's units, written by PreFilter for
// every pod and read by Filter on nodes where other gangs reserve room.
const requestStateKey fwk.StateKey = "gangpack.request"

// requestState also carries the store's generation read at PreFilter, before any refusal of
// this cycle was decided (see ledger.ParkBlocked).
type requestState struct {
	request    topology.Resources
	generation uint64
	// dev is set for a pod with DRA claims when devices are counted (filterDevices).
	dev *podDevices
}

func (s *requestState) Clone() fwk.StateData { return s }

// requestOf returns the request PreFilter recorded, or computes it.
func requestOf(cs fwk.CycleState, pod *v1.Pod) topology.Resources {
	if s, ok := gang.ReadState[*requestState](cs, requestStateKey); ok {
		return s.request
	}
	return gang.Request(pod)
}

// pinWithin is the group domain a partner's pin is confined to (zero: none, or no pin).
func pinWithin(pin *plan.Pin) placement.DomainRef {
	if pin == nil {
		return placement.DomainRef{}
	}
	return pin.Within
}
