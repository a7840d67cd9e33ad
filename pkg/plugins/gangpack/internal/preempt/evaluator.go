package preempt

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// Interface is the plugin's side of gang-aware preemption, as kube-scheduler's
// framework/preemption asks its plugin for the policy: the Evaluator keeps the mechanism
// (victims, records, evictions) and asks planning and the ledger through this.
type Interface interface {
	// Shortfall reports whether the pod's gang (or its placement group) lacks room, planned
	// as PreFilter did and changing nothing; RoomComing when Terminating pods' room would do.
	Shortfall(logger klog.Logger, pod *v1.Pod, all []fwk.NodeInfo) (*gang.Shortfall, *gang.RoomComing)
	// UnitOf names a pod's victim unit beyond its gang (its placement group); nil when none.
	UnitOf() func(*v1.Pod) string
	// Release unwinds a victim gang's, or a displaced holder's, attempt.
	Release(logger klog.Logger, gangKey string)
	// Hold pins the gang to the freed domain and reserves the room its victims give back.
	Hold(logger klog.Logger, sf *gang.Shortfall, nodes []topology.Node, domain string, victims []*v1.Pod)
	// Pins lists every pin: the forming gangs that hold room.
	Pins() []placement.Commitment
	// Go runs f on a goroutine of its own.
	Go(f func())
	// WakeBlockedAfter wakes the pods refused because of held room once d has passed: a
	// standalone preemptor's protection of its nominated node ends then at the latest. The
	// timer is the preemptor's (uid): a new one replaces it, and its binding or deletion stops it.
	WakeBlockedAfter(preemptor types.UID, d time.Duration)
}

// Evaluator is gang-aware, topology-aware preemption: PostFilter's Preempt, and what planning
// reads of it (plan.Victims). It owns the records of the preemptions made and the evictions
// under way.
type Evaluator struct {
	iface   Interface
	handle  fwk.Handle
	members *gang.Members
	// pdbs lists PodDisruptionBudgets (nil: none are considered).
	pdbs      policylisters.PodDisruptionBudgetLister
	preempted *preemptions
	evicting  *evictions
	// now is the clock of records (the ledger's).
	now func() time.Time
	// ctx and logger are for the eviction calls, made off the scheduling cycle.
	ctx    context.Context
	logger klog.Logger
}

// New builds the Evaluator; pdbs may be nil, now is the clock of its records.
func New(ctx context.Context, h fwk.Handle, members *gang.Members, pdbs policylisters.PodDisruptionBudgetLister, iface Interface, now func() time.Time) *Evaluator {
	return &Evaluator{iface: iface, handle: h, members: members, pdbs: pdbs, preempted: newPreemptions(), evicting: newEvictions(),
		now: now, ctx: ctx, logger: klog.FromContext(ctx)}
}

// Awaiting reports whether the preemptor (key) evicted victims for domain that still hold room.
func (e *Evaluator) Awaiting(key, domain string) bool { return e.awaitingVictims(key, domain) }

// WithProtected adds the room preemptors' nominated pods hold at now for the planning of gang
// own (see withProtected).
func (e *Evaluator) WithProtected(own string, others map[string]placement.Reserved, priority func() int32, now time.Time) map[string]placement.Reserved {
	return e.withProtected(own, others, priority, now)
}

// PreemptPriority is the priority a gang member preempts with (see gangPreemptPriority).
func (e *Evaluator) PreemptPriority(pod *v1.Pod) int32 { return e.gangPreemptPriority(pod) }

// PlacedAgain drops a pod that a scheduling cycle reserved again from every record's victims.
func (e *Evaluator) PlacedAgain(uid types.UID) { e.preempted.placedAgain(uid) }

// InFlight is how many eviction calls are under way.
func (e *Evaluator) InFlight() int { return e.evicting.inFlight() }

// UsePDBs sets the PodDisruptionBudget lister preemption ranks candidates with.
func (e *Evaluator) UsePDBs(pdbs policylisters.PodDisruptionBudgetLister) { e.pdbs = pdbs }

// gangLacksRoom asks the plugin whether the pod's gang (or its placement group) lacks room
// and fills the preemptor from the answer; wait is set when room Terminating pods give back
// would let it fit.
func (e *Evaluator) gangLacksRoom(logger klog.Logger, pr *preemptor) (bool, *waitResult) {
	sf, coming := e.iface.Shortfall(logger, pr.pod, pr.all)
	if coming != nil {
		return false, roomComingWait(coming.Pods, coming.Domain)
	}
	if sf == nil {
		return false, nil
	}
	pr.shortfall, pr.gang = sf, sf.Gang
	if sf.Partners != nil {
		pr.partners, pr.groupNodes = sf.Partners, sf.GroupNodes
		return true, nil
	}
	if pr.group != "" {
		// A partner with placed members repairs alone, in its own domain: the record is its
		// gang's, and its group's units stay out of the victims.
		pr.key = pr.ownGang
	}
	pr.nodes = sf.Nodes
	e.markHeldDomains(pr, sf.Info)
	return true, nil
}
