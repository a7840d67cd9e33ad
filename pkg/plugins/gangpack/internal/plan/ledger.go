package plan

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// Reader is what planning reads of the state that lives across scheduling cycles. The
// plugin's ledger (internal/ledger) implements it; planning holds no such state of its own.
type Reader interface {
	// Read is a cycle's first look: one call for what every planning reads first.
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
}

// Effects is what planning has done to that state: decisions carried out (every new pin arms
// its deadline inside the ledger), waits recorded and wake-ups. The plugin's ledger
// implements it; NoEffects does nothing, for the planning that changes nothing.
type Effects interface {
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

// NoEffects changes nothing: every decision is refused, nothing waits and nothing is woken.
// Preemption's questions (LacksRoom), Resume's judgement and Explain plan with it.
type NoEffects struct{}

var _ Effects = NoEffects{}

func (NoEffects) Choose(placement.ChooseRequest, gang.Info) placement.ChooseResult {
	return placement.ChooseResult{}
}
func (NoEffects) Pin(placement.PinRequest, gang.Info, string) (placement.Commitment, placement.PinOutcome) {
	return placement.Commitment{}, placement.HeldByOther
}
func (NoEffects) PinGroup(string, []placement.PinRequest, []gang.Info) ([]placement.Commitment, placement.PinOutcome) {
	return nil, placement.HeldByOther
}
func (NoEffects) Reserve(klog.Logger, string, uint64, placement.Reservation, placement.Capacity) bool {
	return false
}
func (NoEffects) Regrow(string, uint64, int) (placement.Commitment, bool) {
	return placement.Commitment{}, false
}
func (NoEffects) Drop(klog.Logger, placement.Commitment, gang.Drop) bool { return false }
func (NoEffects) WrapFailed(placement.GangOwner)                         {}
func (NoEffects) ParkBlocked(klog.Logger, *v1.Pod, uint64)               {}
func (NoEffects) Await(_, _ *v1.Pod)                                     {}
func (NoEffects) MembersMissing(string)                                  {}
func (NoEffects) MembersComplete(klog.Logger, gang.Info, string, string) (int, bool) {
	return 0, false
}
func (NoEffects) GroupWaits(string, string) (string, bool) { return "", false }
func (NoEffects) GroupReady(string) bool                   { return false }
func (NoEffects) ActivateGroup(klog.Logger, []types.NamespacedName, string) int {
	return 0
}
