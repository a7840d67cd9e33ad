package plan

import (
	"context"
	"errors"
	"fmt"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sort"
	"sync"
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// cycle carries one planning's inputs (one PreFilter, one Explain, one preemption question,
// one Resume, or one partner of a group), built by newCycle only. Planning runs in three
// steps, each in its own file (docs/design.md, "Planning a gang"):
//
//  1. revalidate (revalidate.go): is the gang's existing pin still right? It returns a
//     decision; releases and unwinds follow from it in one place.
//  2. gate (gate.go): may the gang be planned now? (split, templates, sibling and anchor waits)
//  3. choose (choose.go): keep the pin, adopt the placed members' domain, defer the choice to
//     Reserve for a spread anchor, or pin the best-fitting domain; when none can be pinned,
//     nofit.go says why and parks the pod.
type cycle struct {
	pl        *Planner
	logger    klog.Logger
	pod       *v1.Pod
	info      gang.Info
	all       []fwk.NodeInfo
	placed    []gang.Placed
	placedSet map[string]struct{}
	templates []*v1.Pod
	need      int

	// others is what other forming gangs reserve, per node, and the room standalone
	// preemptors of equal or higher priority wait for (room.go, preempt_record.go); node
	// translation (nodes.go) sets it aside unless asked for raw room.
	others map[string]placement.Reserved
	tnodes []topology.Node // the nodes of the last planning, as the planner saw them
	// byDomain replaces tnodes when the last planning came from the plan cache (plancache.go).
	byDomain map[string][]topology.Node
	// classes are the gang's shape classes; with the gang they make the plan cache's
	// signature, computed only when the cache is asked (plancache.go).
	classes []shapeClass
	// primary is the gang's primary extended resource (primaryResource), for the quality
	// gauges; hasPrimary is false when no shape requests one. Set with the gang (buildGang).
	primary    string
	hasPrimary bool
	shapeFits  []*gang.PodFit
	resources  []string // every resource some shape requests: all a plan reads of a node
	gang       topology.Gang
	// generation is the store's hold generation when planning started (see park).
	generation uint64
	// partners are the gang's placement-group partners found by groupGate (partners.go).
	partners []Partner
	// groupWoken is set when groupGate woke the partners' members in this cycle.
	groupWoken bool
	// failed are the owner's failed domains and now the clock, as the cycle began (Read).
	failed map[string]struct{}
	now    time.Time
	// fx carries the cycle's decisions, waits and wake-ups out: the ledger for PreFilter,
	// NoEffects for the planning that changes nothing (LacksRoom, Resume's judgement, Explain).
	fx Effects
	// prefs are the preferences of the domains best fit chose among (prefer.go; nil: none);
	// bestFitAlone is the domain best fit alone would have chosen among them.
	prefs        map[string]int64
	bestFitAlone string
	// terms are the shapes' preferred node-affinity terms, read once (termsRead) per cycle.
	terms     []*nodeaffinity.PreferredSchedulingTerms
	termsRead bool
	// dev is the gang's device view (devices.go; nil: no member requests a device), devErr
	// why its devices could not be counted.
	dev    *gangDevices
	devErr error
	// pinSource says how narrow's pin was found (pinned, preferred, existing, adopted, ...).
	pinSource string
	// groupPlanned is set once placeGroup ran in this cycle: a pin it made that choose finds
	// stale is not planned again in the same cycle.
	groupPlanned bool
}

// Plan is PreFilter's planning for a validated gang member.
func (pl *Planner) Plan(_ context.Context, logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	r := pl.reading(pod, info, nodes)
	return pl.newCycle(logger, pod, info, nodes, r, pl.fx).plan(cs, r.Pin)
}

// plan runs the cycle's steps from the pin it read: revalidate, the group gate, gate, the
// group's placement, choose.
func (p *cycle) plan(cs fwk.CycleState, pin *placement.Commitment) (*fwk.PreFilterResult, *fwk.Status) {
	info := p.info
	pin, st := p.revalidate(pin)
	if st != nil {
		return nil, st
	}
	if info.Group != nil {
		if st := p.groupGate(); st != nil {
			return nil, st
		}
	}
	if st := p.admit(); st != nil {
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

// newCycle is the one constructor of a cycle: pod of the gang info planned over nodes, from
// what the cycle read (r: its generation, failed domains, clock, placed members and the room
// the other gangs reserve) with fx carrying its effects out.
func (pl *Planner) newCycle(logger klog.Logger, pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo, r gang.Reading, fx Effects) *cycle {
	p := &cycle{pl: pl, fx: fx, logger: logger, pod: pod, info: info, all: nodes, generation: r.Generation,
		failed: r.Failed, now: r.Now, others: r.Others}
	p.setPlaced(r.Placed)
	return p
}

// reading is a cycle's first look (Reader.Read), with the room standalone preemptors of
// equal or higher priority wait for added to the other gangs' reservations.
func (pl *Planner) reading(pod *v1.Pod, info gang.Info, nodes []fwk.NodeInfo) gang.Reading {
	r := pl.read.Read(info, nodes)
	r.Others = pl.withProtected(info.Key, r.Others, func() int32 { return pl.gangPreemptPriority(pod) }, r.Now)
	return r
}

// setPlaced records the gang's placed members, by name.
func (p *cycle) setPlaced(placed []gang.Placed) {
	p.placed = placed
	p.placedSet = make(map[string]struct{}, len(p.placed))
	for _, m := range p.placed {
		p.placedSet[m.Pod.Name] = struct{}{}
	}
	sort.Slice(p.placed, func(i, j int) bool { return p.placed[i].Pod.Name < p.placed[j].Pod.Name })
}

// Planner is PreFilter's decision: it plans a gang member over the snapshot and has the
// ledger carry the decision out. The caches derived from the snapshot (the domain index, the
// plan cache) are its own.
type Planner struct {
	args      *gang.Args
	read      Reader  // what planning reads of the state across cycles (the ledger)
	fx        Effects // what PreFilter's planning has done to it (the ledger)
	members   *gang.Members
	nodes     func() fwk.NodeInfoLister // the cycle's snapshot, by node name
	quality   Quality
	podGroups PodGroups
	victims   Victims
	plans     *planCache   // per-domain plans of recent gang signatures (plancache.go)
	domains   *domainIndex // topology key → domain → node names, from node events (nil: scan)
	devices   Devices      // DRA devices in member room (nil: not counted)
	rooms     *devices.RoomCache
	shapes    *shapeKeys // members' shape keys (nil: computed every time)
	// gangClaims holds the member claims of gangs with DRA claims, by gang key (HoldsOn).
	gangClaims sync.Map
}

// Options are the planner's dependencies, each a value: NoQuality, NoPodGroups and NoVictims
// stand for a dependency a caller does without.
type Options struct {
	Args *gang.Args
	// Reader and Effects are the ledger's reads and the effects PreFilter's planning has it
	// carry out (Explain gives its own).
	Reader  Reader
	Effects Effects
	Members *gang.Members
	// Nodes is the snapshot's node infos by name: the scheduler's snapshot lister, or the
	// snapshot an explanation plans over.
	Nodes func() fwk.NodeInfoLister
	// NodeInformer feeds the domain index; nil leaves it out (every domain is found by a
	// scan of the snapshot until IndexNodes builds one).
	NodeInformer coreinformers.NodeInformer
	Quality      Quality
	PodGroups    PodGroups
	Victims      Victims
	// Devices counts DRA devices in member room (devices.go); nil: not counted.
	Devices Devices
}

// Quality is what planning reports to the placement quality gauges (internal/quality).
type Quality interface {
	Planned(key, gangKey string, need int, rooms map[string]int, free map[string]int64, resource string, hasResource bool, pending func(gang string) bool)
	Pending(key, gang string, need int)
}

// NoQuality reports nothing.
type NoQuality struct{}

func (NoQuality) Planned(string, string, int, map[string]int, map[string]int64, string, bool, func(string) bool) {
}
func (NoQuality) Pending(string, string, int) {}

// PodGroups reads PodGroups from the scheduler's PodGroup informer.
type PodGroups interface {
	// Get returns the PodGroup, or an error when it does not exist.
	Get(ns, name string) (*schedv1alpha1.PodGroup, error)
	// List lists a namespace's PodGroups; nil when none are served.
	List(ns string, sel labels.Selector) ([]*schedv1alpha1.PodGroup, error)
}

// NoPodGroups serves no PodGroup.
type NoPodGroups struct{}

func (NoPodGroups) Get(ns, name string) (*schedv1alpha1.PodGroup, error) {
	return nil, fmt.Errorf("no PodGroup reader: %s/%s", ns, name)
}
func (NoPodGroups) List(string, labels.Selector) ([]*schedv1alpha1.PodGroup, error) {
	return nil, nil
}

// Victims is what planning reads of preemption: whether a domain still waits for its
// victims, the room standalone preemptors wait for, and a gang's preemption priority.
type Victims interface {
	Awaiting(key, domain string) bool
	WithProtected(own string, others map[string]placement.Reserved, priority func() int32, now time.Time) map[string]placement.Reserved
	PreemptPriority(pod *v1.Pod) int32
}

// NoVictims is preemption turned off: no domain awaits victims, no room is protected.
type NoVictims struct{}

func (NoVictims) Awaiting(string, string) bool { return false }
func (NoVictims) WithProtected(_ string, others map[string]placement.Reserved, _ func() int32, _ time.Time) map[string]placement.Reserved {
	return others
}
func (NoVictims) PreemptPriority(*v1.Pod) int32 { return 0 }

// New builds the planner from its dependencies, every one given (see Options), and, with a
// node informer, the domain index fed by its events.
func New(o Options) (*Planner, error) {
	if o.Args == nil || o.Reader == nil || o.Effects == nil || o.Members == nil || o.Nodes == nil || o.Quality == nil || o.PodGroups == nil || o.Victims == nil {
		return nil, errors.New("plan.New: every dependency but the node informer is required")
	}
	pl := &Planner{args: o.Args, read: o.Reader, fx: o.Effects, members: o.Members, nodes: o.Nodes, quality: o.Quality,
		podGroups: o.PodGroups, victims: o.Victims, plans: newPlanCache(), devices: o.Devices, rooms: devices.NewRoomCache(),
		shapes: newShapeKeys()}
	if o.NodeInformer != nil {
		pl.domains = newDomainIndex(o.NodeInformer.Lister(), o.NodeInformer.Informer().HasSynced)
		if err := pl.domains.watch(o.NodeInformer.Informer()); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

func (pl *Planner) withProtected(own string, others map[string]placement.Reserved, priority func() int32, now time.Time) map[string]placement.Reserved {
	return pl.victims.WithProtected(own, others, priority, now)
}

func (pl *Planner) gangPreemptPriority(pod *v1.Pod) int32 {
	return pl.victims.PreemptPriority(pod)
}

func (pl *Planner) awaitingVictims(key, domain string) bool {
	return pl.victims.Awaiting(key, domain)
}
