package plan

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Ledger is everything planning may read from, or have done to, the state that lives across
// scheduling cycles. The plugin's ledger (internal/ledger) implements it; planning holds no
// such state of its own.
type Ledger interface {
	// What planning reads. Read is a cycle's first look: one call for what every planning
	// reads first.
	Read(g gang.Info, all []fwk.NodeInfo) gang.Reading
	Commitment(key string) (placement.Commitment, bool)
	Pinned(key string) bool
	Generation() uint64
	ReservedExcept(except string) map[string]placement.Reserved
	FormingIn(prefix, except string) int
	Failed(o placement.GangOwner, key string) map[string]struct{}
	FailedHas(o placement.GangOwner, d placement.DomainRef) bool
	Resting(o placement.GangOwner, key string) map[string]struct{}
	Placed(g gang.Info, all []fwk.NodeInfo) []gang.Placed
	WaiterNodes(g gang.Info, id uint64) []string

	// Decisions carried out: every new pin arms its deadline inside the ledger.
	Choose(req placement.ChooseRequest, info gang.Info) placement.ChooseResult
	Pin(req placement.PinRequest, info gang.Info, group string) (placement.Commitment, placement.PinOutcome)
	PinGroup(group string, reqs []placement.PinRequest, infos []gang.Info) ([]placement.Commitment, placement.PinOutcome)
	Reserve(logger klog.Logger, key string, id uint64, r placement.Reservation, c placement.Capacity) bool
	Regrow(key string, id uint64, remaining int) (placement.Commitment, bool)
	Drop(logger klog.Logger, c placement.Commitment, d gang.Drop) (waitersRejected bool)
	WrapFailed(o placement.GangOwner)

	// Waiting and waking.
	ParkBlocked(logger klog.Logger, pod *v1.Pod, generation uint64)
	Await(awaited, waiter *v1.Pod)
	MembersMissing(key string)
	MembersComplete(logger klog.Logger, info gang.Info, except, trigger string) (woken int, waited bool)
	GroupWaits(group, why string) (prev string, had bool)
	GroupReady(group string) bool
	ActivateGroup(logger klog.Logger, partners []types.NamespacedName, except string) int
}
