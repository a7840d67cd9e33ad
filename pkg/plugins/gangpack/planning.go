package gangpack

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// planner carries one PreFilter's planning inputs. Planning runs in three steps, each in its
// own file (docs/design.md, "Planning a gang"):
//
//  1. revalidate (revalidate.go): is the gang's existing pin still right? It returns a
//     decision; releases and unwinds follow from it in one place.
//  2. gate (gate.go): may the gang be planned now? (split, templates, sibling and anchor waits)
//  3. choose (choose.go): keep the pin, adopt the placed members' domain, defer the choice to
//     Reserve for a spread anchor, or pin the best-fitting domain.
type planner struct {
	pl        *GangPack
	logger    klog.Logger
	pod       *v1.Pod
	info      gang.Info
	all       []fwk.NodeInfo
	placed    []gang.Placed
	placedSet map[string]struct{}
	templates []*v1.Pod
	need      int

	// others is what other forming gangs reserve, per node, and the room standalone
	// preemptors of equal or higher priority wait for (room.go, preempt_record.go);
	// ignoreReserved makes topologyNodes count room as if nobody reserved any.
	others         map[string]placement.Reserved
	ignoreReserved bool
	// returning is the room Terminating pods give back, per node, counted as free only when
	// preemption asks whether room is coming (preempt_room.go); nil otherwise.
	returning map[string]returning
	tnodes    []topology.Node // the nodes of the last planning, as the planner saw them
	// byDomain replaces tnodes when the last planning came from the plan cache (plancache.go).
	byDomain  map[string][]topology.Node
	signature string // what the plan of a domain depends on besides its nodes (plancache.go)
	shapeFits []*gang.PodFit
	resources []string // every resource some shape requests: all a plan reads of a node
	gang      topology.Gang
	// generation is the store's hold generation when planning started (see park).
	generation uint64
	// partners are the gang's placement-group partners found by groupGate (partners.go).
	partners []partner
	// groupWoken is set when groupGate woke the partners' members in this cycle.
	groupWoken bool
	// groupPlanned is set once placeGroup ran in this cycle: a pin it made that choose finds
	// stale is not planned again in the same cycle.
	groupPlanned bool
}

// plan is PreFilter's planning for a validated gang member.
func (pl *GangPack) plan(_ context.Context, logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p := &planner{pl: pl, logger: logger, pod: pod, info: info, all: nodes, generation: pl.ledger.Generation()}
	p.others = pl.withProtected(pl.ledger.ReservedExcept(info.Key), func() int32 { return pl.gangPreemptPriority(pod) })
	p.findPlaced()
	pin, st := p.revalidate()
	if st != nil {
		return nil, st
	}
	if info.Group != nil {
		if st := p.groupGate(); st != nil {
			return nil, st
		}
	}
	if st := p.gate(); st != nil {
		return nil, st
	}
	if info.Group != nil && pin == nil && len(p.placed) == 0 {
		c, st := p.placeGroup()
		if st != nil {
			return nil, st
		}
		pin = c
	}
	return p.choose(cs, pin)
}

// findPlaced finds the gang's live members on nodes (bound or assumed), sorted by pod name.
func (p *planner) findPlaced() {
	p.placed = p.pl.ledger.Placed(p.info, p.all)
	p.placedSet = make(map[string]struct{}, len(p.placed))
	for _, m := range p.placed {
		p.placedSet[m.Pod.Name] = struct{}{}
	}
	sort.Slice(p.placed, func(i, j int) bool { return p.placed[i].Pod.Name < p.placed[j].Pod.Name })
}

// split reports members in more than one domain, or on a node without the label.
func (p *planner) split() bool {
	domains := map[string]struct{}{}
	for _, m := range p.placed {
		if m.Domain == "" {
			return true
		}
		domains[m.Domain] = struct{}{}
	}
	return len(domains) > 1
}

func (p *planner) placedPods() []*v1.Pod {
	out := make([]*v1.Pod, len(p.placed))
	for i, m := range p.placed {
		out[i] = m.Pod
	}
	return out
}

func (p *planner) placedIn(domain string) int {
	n := 0
	for _, m := range p.placed {
		if m.Domain == domain {
			n++
		}
	}
	return n
}

// waitForRoom records the pod as blocked by a hold, so the next hold lift wakes it. A hold lifted
// between the decision and the record (the store's generation moved) wakes it at once.
func (p *planner) waitForRoom() {
	p.pl.ledger.ParkBlocked(p.logger, p.pod, p.generation)
}
