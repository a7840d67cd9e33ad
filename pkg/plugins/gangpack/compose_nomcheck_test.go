package gangpack

import (
	"slices"
	"strings"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The composition test's invariants on room: reservations and nominations
// (compose_nominator_test.go models who holds a nomination).

// pendingPod reports a pod that waits to be scheduled: neither assumed, bound nor gone.
func pendingPod(sp *simPod) bool {
	return sp.state == stActive || sp.state == stParked || sp.state == stGated
}

// reservesFor reports whether the reservation on a node sets room aside for the pod: its gang
// is among the reserving ones (the plugin's Filter then gives a nominated member's room back
// once, withNominatedReserved).
func reservesFor(r placement.Reserved, sp *simPod) bool {
	key, _, member := gang.Of(sp.pod)
	if !member {
		return false
	}
	_, ok := slices.BinarySearch(r.Gangs, key)
	return ok
}

// nominationCovered reports whether room on node is held for the pod by this scheduler: its
// own preemption's (the evaluator's record: its victims still terminate, or a standalone
// preemptor's node is still protected, Evaluator.Nominates), or its gang's reservation on
// the node (a live attempt, or a gang resumed from its nominations). A node deleted since
// holds no room for anyone.
func (c *checker) nominationCovered(sp *simPod, node string) bool {
	return c.s.node(node) == nil || c.s.pl.evaluator.Nominates(sp.pod) ||
		reservesFor(c.s.pl.ledger.ReservedOn(node, ""), sp)
}

// checkNominations is no-phantom: a pending pod's nominatedNodeName, as the API holds it,
// names a node where room is held for it (nominationCovered). A waiting or admitted member is
// assumed, not pending: its published node is its attempt's. Only the pod's own scheduling
// cycle can change its nomination (kube-scheduler clears none when victims end or a hold is
// released), so a nomination judged covered, or inherited by a restarted instance, is
// accepted until the pod is popped again (schedOne resets nomOK); from then on, every
// outcome of the attempt must leave either no nomination or a covered one.
func (c *checker) checkNominations(label string) {
	for _, sp := range c.s.pods {
		n := sp.pod.Status.NominatedNodeName
		if !pendingPod(sp) || n == "" {
			continue
		}
		if c.nominationCovered(sp, n) {
			sp.nomOK = n
			continue
		}
		if sp.nomOK != n {
			c.fail(invNoPhantom, "%s: %s (pending, state %d) is nominated to %s, where neither its preemption nor its gang's reservation holds room",
				label, sp.pod.Name, sp.state, n)
			sp.nomOK = n // once per nomination
		}
	}
}

// gangPriority is the priority of the gang's members (ok false: no member left).
func (c *checker) gangPriority(key string) (int32, bool) {
	ms := c.members(strings.TrimPrefix(key, testNS+"/"))
	if len(ms) == 0 {
		return 0, false
	}
	return corev1helpers.PodPriority(ms[0].pod), true
}

// checkRoom is no-double-count. On every node where forming gangs reserve room, for every
// reserving gang G of member priority p:
//
//	reserved(node) + preempting(node, ≥ p) ≤ free(node)
//
// where free is the node's allocatable GPUs minus the live placed pods' requests (assumed,
// admitted, bound; pods being deleted count as gone, so a preemptor's hold counts its
// victims' room), reserved the GPUs every forming reservation there holds, and preempting the
// requests of the pods the nominator holds on the node (inNominator) with priority ≥ p whose
// nomination is their own preemption's (Evaluator.Nominates) and whose gang does not reserve
// there (reservesFor). That is the room kube-scheduler's Filter sees taken when G's member
// tries the node: its first pass adds the nominated pods (framework.go:1195-1217) and the
// plugin's Filter the other gangs' reservations, giving a reserving gang's nominated member's
// room back once (withNominatedReserved). Above free, a member of G is refused room its
// reservation holds: the same room counted twice.
//
// The nominations the plugin plans around are its preemptions'; the others are bounded by
// no-phantom instead: none is left by an attempt, and one inherited from a previous leader or
// outliving its preemption lasts until the pod's next cycle (kube-scheduler's Filter counts it
// until then, which the plugin does not plan for).
func (c *checker) checkRoom(label string) {
	s := c.s
	reserved := map[string]int64{}
	who := map[string][]string{}
	for _, cm := range s.pl.ledger.Pins() {
		if !cm.Forming() {
			continue
		}
		for n, sl := range cm.Reserved {
			if sl.Count > 0 {
				reserved[n] += int64(sl.Count) * sl.Each[testGPU]
				who[n] = append(who[n], cm.Gang)
			}
		}
	}
	var nominated map[string][]*simPod
	for _, n := range s.nodes {
		if reserved[n.Name] == 0 {
			continue
		}
		free := c.freeGPUs(n, nil)
		if reserved[n.Name] > free {
			c.fail(invDoubleCount, "%s: node %s: %d GPUs reserved by %v, %d free", label, n.Name, reserved[n.Name], who[n.Name], free)
			continue
		}
		if nominated == nil {
			nominated = s.nominatedByNode()
		}
		c.checkNominatedRoom(label, n.Name, reserved[n.Name], free, who[n.Name], nominated[n.Name])
	}
}

// checkNominatedRoom is checkRoom's term of the nominated pods on one node.
func (c *checker) checkNominatedRoom(label, node string, reserved, free int64, gangs []string, nominated []*simPod) {
	if len(nominated) == 0 {
		return
	}
	r := c.s.pl.ledger.ReservedOn(node, "")
	for _, g := range gangs {
		p, ok := c.gangPriority(g)
		if !ok {
			continue
		}
		var taken int64
		var names []string
		for _, q := range nominated {
			if corev1helpers.PodPriority(q.pod) >= p && !reservesFor(r, q) && c.s.pl.evaluator.Nominates(q.pod) {
				taken += gang.Request(q.pod)[testGPU]
				names = append(names, q.pod.Name)
			}
		}
		if reserved+taken > free {
			c.fail(invDoubleCount, "%s: node %s: %d GPUs reserved by %v and %d by preemptors nominated there %v (priority ≥ %s's %d), %d free",
				label, node, reserved, gangs, taken, names, g, p, free)
			return
		}
	}
}
