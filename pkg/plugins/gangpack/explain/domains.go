package explain

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// DomainsResult is the fragmentation view of one topology key for one member shape.
type DomainsResult struct {
	TopologyKey string `json:"topologyKey"`
	// Resource is the accelerator the counts are in (the shape's first extended resource).
	Resource            string           `json:"resource"`
	Shape               map[string]int64 `json:"shape"`
	AntiAffinityPerNode bool             `json:"antiAffinityPerNode"`
	ReservationsKnown   bool             `json:"reservationsKnown"`
	Domains             []DomainUse      `json:"domains"`
}

// DomainUse is one domain's line.
type DomainUse struct {
	Name        string `json:"name"`
	Nodes       int    `json:"nodes"`
	Allocatable int64  `json:"allocatable"`
	// Free is allocatable minus requested, reservations not set aside.
	Free int64 `json:"free"`
	// Reserved is how many members forming gangs reserve room for here, ReservedUnits the
	// units of Resource that room is.
	Reserved      int   `json:"reserved"`
	ReservedUnits int64 `json:"reservedUnits"`
	BoundGangs    int   `json:"boundGangs"`
	// LargestGang is the largest gang of the shape the domain can place now (outside
	// reservations), by the scheduler's member room and "can the gang form" rules.
	LargestGang int `json:"largestGang"`
	// Stranded is the free units (outside reservations) no member of the shape can use.
	Stranded int64 `json:"stranded"`
}

// Domains is the fragmentation view: per domain, capacity, use and the largest gang of the
// shape it can place.
func Domains(c *Cluster, s Shape) (*DomainsResult, error) {
	s.MinMember = 1
	c = c.withAssumed()
	cc, pg, pods, err := c.hypothetical(s)
	if err != nil {
		return nil, err
	}
	ex, nodes, info, refused, err := cc.explain(pg, pods[0], pods)
	if err != nil {
		return nil, err
	}
	if refused != "" {
		return nil, fmt.Errorf("%s", refused)
	}
	shape := map[string]int64{}
	for r, q := range ex.Gang.Shapes[0] {
		shape[r] = q
	}
	out := &DomainsResult{TopologyKey: info.TopologyKey, Resource: Primary(shape), Shape: shape,
		AntiAffinityPerNode: s.AntiAffinityPerNode, ReservationsKnown: c.Reservations != nil}
	res := out.Resource
	byDomain := map[string][]topology.Node{}
	for _, n := range ex.Nodes {
		byDomain[n.Domain] = append(byDomain[n.Domain], n)
	}
	for name, dp := range ex.Plans {
		u := DomainUse{Name: name, Nodes: len(dp.Nodes), LargestGang: largestGang(ex, byDomain[name], ex.MemberRooms[name])}
		var outside int64
		for _, n := range byDomain[name] {
			outside += max(n.Free[res], 0)
		}
		u.Stranded = max(outside-int64(ex.MemberRooms[name])*shape[res], 0)
		out.Domains = append(out.Domains, u)
	}
	sort.Slice(out.Domains, func(i, j int) bool { return out.Domains[i].Name < out.Domains[j].Name })
	usage(c, out, info, nodes)
	return out, nil
}

// largestGang is the largest k for which a gang of k members of the shape can form in the
// domain: the planner's own room rule, searched between 0 and the nodes' member room.
func largestGang(ex *plan.Explanation, nodes []topology.Node, upper int) int {
	fits := func(k int) bool {
		g := topology.Gang{Shapes: ex.Gang.Shapes[:1], Current: 0, Siblings: []int{k - 1}, Need: k, Apart: ex.Gang.Apart}
		dp := topology.Plan(&g, nodes)
		for _, p := range dp {
			return p.Room >= k
		}
		return false
	}
	lo, hi := 0, upper // fits(lo) holds (or lo is 0); the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// usage fills each domain's allocatable and free units, reserved room and bound gangs.
func usage(c *Cluster, out *DomainsResult, info gang.Info, nodes []fwk.NodeInfo) {
	idx := make(map[string]int, len(out.Domains))
	for i, d := range out.Domains {
		idx[d.Name] = i
	}
	res := out.Resource
	domainOf := map[string]int{}
	gangs := make([]map[string]struct{}, len(out.Domains))
	for _, ni := range nodes {
		n := ni.Node()
		if n == nil {
			continue
		}
		i, ok := idx[n.Labels[info.TopologyKey]]
		if !ok {
			continue
		}
		domainOf[n.Name] = i
		d := &out.Domains[i]
		d.Allocatable += allocatable(ni, res)
		free, _ := gang.NodeFree(ni, []string{res})
		d.Free += max(free[res], 0)
		for _, pi := range ni.GetPods() {
			if key, _, ok := gang.Of(pi.GetPod()); ok && gang.Live(pi.GetPod()) {
				if gangs[i] == nil {
					gangs[i] = map[string]struct{}{}
				}
				gangs[i][key] = struct{}{}
			}
		}
	}
	for i := range out.Domains {
		out.Domains[i].BoundGangs = len(gangs[i])
	}
	if c.Reservations == nil {
		return
	}
	for _, p := range c.Reservations.Pins {
		if !p.Forming {
			continue
		}
		for _, s := range p.Reserved {
			if i, ok := domainOf[s.Node]; ok {
				out.Domains[i].Reserved += s.Members
				out.Domains[i].ReservedUnits += int64(s.Members) * s.Each[res]
			}
		}
	}
}

// allocatable is the node's allocatable amount of the resource in the planner's units.
func allocatable(ni fwk.NodeInfo, name string) int64 {
	a := ni.GetAllocatable()
	switch v1.ResourceName(name) {
	case v1.ResourceCPU:
		return a.GetMilliCPU()
	case v1.ResourceMemory:
		return a.GetMemory()
	case v1.ResourceEphemeralStorage:
		return a.GetEphemeralStorage()
	}
	return a.GetScalarResources()[v1.ResourceName(name)]
}
