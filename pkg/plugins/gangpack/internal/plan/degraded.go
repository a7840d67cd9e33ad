package plan

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// A degraded gang is bound in a domain with fewer than minMember live members while
// replacements are pending (a member's node failed, a member was deleted): its replacements
// may only join that domain. When the domain lacks room for them, the wait names the gang as
// degraded, and PostFilter reads the figures (Degraded) to repair it by preemption inside the
// domain or, when nothing can be evicted, to say on the PodGroup that it cannot be repaired.

// DegradedStateKey is the CycleState key of a degraded gang's shortfall.
const DegradedStateKey fwk.StateKey = "gangpack.degraded"

// Degraded is a degraded gang's shortfall in its domain, as PreFilter found it.
type Degraded struct {
	Gang   string
	Domain string
	// Room is how many of the Missing members the domain has room for (members already
	// assumed there count).
	Room, Missing int
	// Coming is set when room that Terminating pods give back in the domain would let the
	// missing members in: the gang is being repaired by waiting.
	Coming bool
}

func (d *Degraded) Clone() fwk.StateData { return d }

// ReadDegraded returns the cycle's degraded shortfall, nil when PreFilter wrote none.
func ReadDegraded(cs fwk.CycleState) *Degraded {
	d, _ := gang.ReadState[*Degraded](cs, DegradedStateKey)
	return d
}

// boundPlaced counts the placed members the API server shows bound: members this scheduler
// only assumed (waiting at Permit, binding) are not bound yet.
func (p *cycle) boundPlaced() int {
	n := 0
	for _, m := range p.placed {
		if isBound(p.pl.members, m.Pod) {
			n++
		}
	}
	return n
}

// isBound reports whether the API server shows the pod bound.
func isBound(members *gang.Members, pod *v1.Pod) bool {
	if members == nil {
		return pod.Spec.NodeName != ""
	}
	q, err := members.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && q.UID == pod.UID && q.Spec.NodeName != ""
}

// degraded returns the gang's degraded shortfall in domain when it has bound members and its
// domain has room for only room of the p.need members still to place; nil when none is bound.
func (p *cycle) degraded(domain string, room int) *Degraded {
	bound := p.boundPlaced()
	if bound == 0 || bound >= p.info.MinMember {
		return nil
	}
	missing := p.info.MinMember - bound
	assumed := len(p.placed) - bound
	return &Degraded{Gang: p.info.Key, Domain: domain, Room: min(missing, assumed+max(room, 0)), Missing: missing}
}

// short is the status of a member whose pinned or adopted domain lacks room for the gang:
// short is PinnedShort's or AdoptedShort's text. For a degraded gang the text names it as
// degraded, and the figures go to the cycle state for PostFilter (cs may be nil).
func (p *cycle) short(cs fwk.CycleState, short, domain string, room int) *fwk.Status {
	d := p.degraded(domain, room)
	if d == nil {
		return fwk.NewStatus(fwk.Unschedulable, short)
	}
	if cs != nil {
		d.Coming = p.roomComing(p.nodesOfDomain(p.info.TopologyKey, domain), p.now) != nil
		cs.Write(DegradedStateKey, d)
	}
	return fwk.NewStatus(fwk.Unschedulable, msg.ShortDegraded(short, msg.Degraded(d.Gang, d.Domain, d.Room, d.Missing)))
}
