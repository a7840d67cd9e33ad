// Package explain answers "where would OMEGangPack place this gang, and why" without
// scheduling anything: it runs the plugin's own planning (internal/plan's Planner, in its
// side-effect-free mode) over a snapshot built from nodes and pods read from the API server,
// with the other gangs' room reservations the scheduler serves (Reservations). kubectl-ome
// (cmd/kubectl-ome) prints its answers.
package explain

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// GCPercent is the garbage collector's target kubectl-ome runs with: one explanation over
// 5,000 nodes allocates about 30 MB of short-lived objects in a short-lived process.
const GCPercent = 400

// Cluster is what explain reads of the cluster.
type Cluster struct {
	Nodes []*v1.Node
	// Pods are every pod (any phase): those on nodes occupy them, a gang's unbound ones are
	// its templates.
	Pods []*v1.Pod
	// Reservations are the scheduler's pins; nil when they are unknown.
	Reservations *Reservations
	// Args are the plugin's arguments (Reservations.Args when served).
	Args *Args
	// DRA are the cluster's DRA objects; nil plans without devices.
	DRA *DRA
	Now time.Time
	// assumed are the pods withAssumed put on their nodes (UIDs): the snapshot has them there,
	// the API server (what the planner's member lister reads, as the scheduler's does) not.
	assumed map[string]struct{}
}

// Request names the gang to explain.
type Request struct {
	PodGroup *schedv1alpha1.PodGroup
	// Pod is the member planning runs for; nil = the gang's first live unbound member by name.
	Pod *v1.Pod
	// Extra are hypothetical members (whatif): templates that occupy no node.
	Extra []*v1.Pod
}

// Result is explain's answer; its JSON form is documented in docs/reference.md.
type Result struct {
	PodGroup          string   `json:"podGroup"`
	TopologyKey       string   `json:"topologyKey"`
	ChosenDomain      string   `json:"chosenDomain"`
	Reason            string   `json:"reason"`
	MinMember         int      `json:"minMember"`
	Need              int      `json:"need"`
	Placed            int      `json:"placed"`
	ReservationsKnown bool     `json:"reservationsKnown"`
	Domains           []Domain `json:"domains"`
}

// Domain is one domain of the gang's topology key.
type Domain struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	// Free is allocatable minus requested of each resource the gang requests, over the
	// domain's nodes, reservations not set aside.
	Free map[string]int64 `json:"free"`
	// MemberRoom is the domain's room for this gang (docs/design.md §3.3): what best fit
	// compares; 0 when the whole gang cannot form there.
	MemberRoom int `json:"memberRoom"`
	// NodeRoom is how many members of the gang's shape the nodes can take one by one.
	NodeRoom int `json:"nodeRoom"`
	// Reserved is how many members other forming gangs reserve room for on its nodes.
	Reserved int `json:"reserved"`
	// Devices is the domain's free DRA devices per driver (published minus allocated); set
	// when the cluster publishes devices on its nodes.
	Devices map[string]int `json:"devices,omitempty"`
	Fits    bool           `json:"fits"`
	// Preference is what the members would score there by their preferred node affinity
	// (docs/design.md §4.1): set on the domains that fit when the members have preferences.
	Preference *int64 `json:"preference,omitempty"`
	Reason     string `json:"reason"`
}

// Explain plans the gang as the scheduler's PreFilter would, changing nothing. A gang whose
// live members are all on nodes is planned again as if none were placed, which shows why its
// domain was the best fit (or what would be now).
func Explain(c *Cluster, r Request) (*Result, error) {
	c = c.withAssumed()
	pg := r.PodGroup
	res := &Result{PodGroup: pg.Namespace + "/" + pg.Name, MinMember: int(pg.Spec.MinMember), ReservationsKnown: c.Reservations != nil}
	pod, placedOn := r.Pod, []string(nil)
	if pod == nil {
		pod, placedOn = memberToPlan(c.Pods, pg, r.Extra)
		if pod == nil {
			return nil, fmt.Errorf("PodGroup %s has no live member pods: nothing to plan", res.PodGroup)
		}
		if placedOn != nil {
			c = c.unplaced(pg)
		}
	}
	ex, _, info, refused, err := c.explain(pg, pod, r.Extra)
	if err != nil {
		return nil, err
	}
	if refused != "" { // the PodGroup itself is refused: the scheduler's message says why
		res.Reason = refused
		return res, nil
	}
	res.TopologyKey = info.TopologyKey
	res.Need, res.Placed = ex.Need, ex.Placed
	res.ChosenDomain = ex.Domain
	res.Reason = chosenReason(ex, c.Reservations != nil)
	if placedOn != nil {
		res.Placed = len(placedOn)
		res.ChosenDomain = domainOfNode(ex, placedOn[0])
		res.Reason = fmt.Sprintf("the gang is placed: %d members on nodes of %s; planned again without them, %s", len(placedOn), res.ChosenDomain, res.Reason)
	}
	res.Domains = domainsOf(ex, info, c.Reservations)
	held := heldDevices(c.DRA)
	for i := range res.Domains {
		res.Domains[i].Devices = freeDevices(c.DRA, held, ex.Plans[res.Domains[i].Name].Nodes)
	}
	return res, nil
}

// explain interprets the PodGroup for pod and plans it. When the scheduler would refuse the
// PodGroup itself, refused is the scheduler's message and nothing is planned.
func (c *Cluster) explain(pg *schedv1alpha1.PodGroup, pod *v1.Pod, extra []*v1.Pod) (ex *plan.Explanation, nodes []fwk.NodeInfo, info gang.Info, refused string, err error) {
	info, st := gang.Interpret(c.Args, pod, pg)
	if st != nil {
		return nil, nil, info, st.Message(), nil
	}
	pl, nodes, err := c.planner(pod, extra)
	if err != nil {
		return nil, nil, info, "", err
	}
	e := pl.Explain(klog.Background(), pod, info, nodes)
	return &e, nodes, info, "", nil
}

// planner builds the plugin's planner over a read-only copy of the scheduler's pins, and the
// snapshot's node infos, built as the scheduler's cache builds its snapshot, with the pods
// nominated to a node that kube-scheduler's Filter would count there for pod (nominatedFor).
func (c *Cluster) planner(pod *v1.Pod, extra []*v1.Pod) (*plan.Planner, []fwk.NodeInfo, error) {
	members, err := gang.NewMembersOf(append(c.apiPods(), extra...))
	if err != nil {
		return nil, nil, err
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	l := &readOnly{store: c.Reservations.store(), now: now, stale: c.Reservations.stale()}
	snap := snapshotOf(c.Nodes, append(c.Pods[:len(c.Pods):len(c.Pods)], c.nominatedFor(pod)...))
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		return nil, nil, err
	}
	pl, err := plan.New(plan.Options{Args: c.Args, Reader: l, Effects: &scratch{store: l.store}, Members: members, Nodes: snap.NodeInfos,
		Quality: plan.NoQuality{}, PodGroups: plan.NoPodGroups{}, Victims: plan.NoVictims{}, Devices: devicesOf(c.DRA)})
	if err != nil {
		return nil, nil, err
	}
	return pl, nodes, nil
}

// Snapshot is the node infos of the scheduler's snapshot of nodes and pods: the pods bound
// to a node, terminal ones left out (the scheduler's cache drops them).
func Snapshot(nodes []*v1.Node, pods []*v1.Pod) ([]fwk.NodeInfo, error) {
	return snapshotOf(nodes, pods).NodeInfos().List()
}

// snapshotOf is the scheduler's snapshot of nodes and pods (see Snapshot).
func snapshotOf(nodes []*v1.Node, pods []*v1.Pod) *schedcache.Snapshot {
	var onNodes []*v1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			onNodes = append(onNodes, p)
		}
	}
	return schedcache.NewSnapshot(onNodes, nodes)
}

// memberToPlan is the member the scheduler would plan: the first live unbound one by name
// (hypothetical members first). When every live member is on a node, the first one without
// its node, and the nodes of all of them (placedOn).
func memberToPlan(pods []*v1.Pod, pg *schedv1alpha1.PodGroup, extra []*v1.Pod) (*v1.Pod, []string) {
	if len(extra) > 0 {
		return extra[0], nil
	}
	live := liveMembers(pods, pg)
	var placedOn []string
	for _, p := range live {
		if p.Spec.NodeName == "" {
			return p, nil
		}
		placedOn = append(placedOn, p.Spec.NodeName)
	}
	if len(live) == 0 {
		return nil, nil
	}
	cp := live[0].DeepCopy()
	cp.Spec.NodeName = ""
	return cp, placedOn
}

func liveMembers(pods []*v1.Pod, pg *schedv1alpha1.PodGroup) []*v1.Pod {
	var live []*v1.Pod
	for _, p := range pods {
		if p.Namespace == pg.Namespace && p.Labels[gang.Label] == pg.Name && gang.Live(p) {
			live = append(live, p)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
	return live
}

// unplaced is the cluster with the gang's live members taken off their nodes and without
// the gang's pin: the gang as it was before its first planning.
func (c *Cluster) unplaced(pg *schedv1alpha1.PodGroup) *Cluster {
	cc := *c
	if c.Reservations != nil {
		r := *c.Reservations
		r.Pins = nil
		for _, p := range c.Reservations.Pins {
			if p.Gang != pg.Namespace+"/"+pg.Name {
				r.Pins = append(r.Pins, p)
			}
		}
		cc.Reservations = &r
	}
	cc.Pods = make([]*v1.Pod, len(c.Pods))
	for i, p := range c.Pods {
		if p.Namespace == pg.Namespace && p.Labels[gang.Label] == pg.Name && gang.Live(p) {
			p = p.DeepCopy()
			p.Spec.NodeName = ""
		}
		cc.Pods[i] = p
	}
	return &cc
}

func domainOfNode(ex *plan.Explanation, node string) string {
	for _, n := range ex.Nodes {
		if n.Name == node {
			return n.Domain
		}
	}
	return ""
}

// withAssumed is the cluster with the members the scheduler placed but has not bound yet on
// their nodes, as the scheduler's snapshot has them.
func (c *Cluster) withAssumed() *Cluster {
	if c.Reservations == nil || len(c.Reservations.Assumed) == 0 {
		return c
	}
	at := make(map[string]string, len(c.Reservations.Assumed))
	for _, a := range c.Reservations.Assumed {
		at[a.UID] = a.Node
	}
	cc := *c
	cc.Pods = make([]*v1.Pod, len(c.Pods))
	cc.assumed = map[string]struct{}{}
	for i, p := range c.Pods {
		if node, ok := at[string(p.UID)]; ok && p.Spec.NodeName == "" {
			p = p.DeepCopy()
			p.Spec.NodeName = node
			cc.assumed[string(p.UID)] = struct{}{}
		}
		cc.Pods[i] = p
	}
	return &cc
}

// apiPods are the cluster's pods as the API server shows them: the assumed members
// (withAssumed) without their node. The scheduler's member lister reads the API server, so a
// member only assumed is placed (it occupies its node) but not bound.
func (c *Cluster) apiPods() []*v1.Pod {
	out := make([]*v1.Pod, len(c.Pods))
	for i, p := range c.Pods {
		if _, ok := c.assumed[string(p.UID)]; ok && p.Spec.NodeName != "" {
			p = p.DeepCopy()
			p.Spec.NodeName = ""
		}
		out[i] = p
	}
	return out
}
