package gangpack

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/quality"
)

// Observation at admission (gang_placement_total{single_domain|split} and the formation
// time): no function here changes a scheduling decision.

// gangAdmitted is the Permit hook after an admit. Only the member that completed the gang
// (once per attempt) counts: surplus members and adoptions that were committed at once do not.
// It verifies from the scheduling snapshot that every placed member of the gang, the current
// one on nodeName included, sits in the pinned domain, and observes the formation duration.
func (pl *GangPack) gangAdmitted(logger klog.Logger, cs fwk.CycleState, pod *v1.Pod, pin *plan.Pin, nodeName string) {
	if !formed(cs) {
		return
	}
	placed := pl.placedDomains(pod, pin, nodeName)
	if quality.PlacementOutcome(placed, pin.Domain) == metrics.OutcomeSplit {
		metrics.PlacementTotal.WithLabelValues(metrics.OutcomeSplit).Inc()
		logger.Error(nil, "Gang admitted with members outside its pinned domain", "gang", pin.Gang.Key,
			"topologyKey", pin.Gang.TopologyKey, "domain", pin.Domain, "placed", placed)
	} else {
		metrics.PlacementTotal.WithLabelValues(metrics.OutcomeSingleDomain).Inc()
	}
	if start, ok := pl.formationStart(pin.Gang); ok {
		metrics.FormationDuration.Observe(quality.FormationSeconds(start, time.Now()))
	}
}

// placedDomains maps every member of the gang on a snapshot node (bound or assumed, as
// the ledger's Placed finds them), plus the current pod on nodeName, to its domain under the gang's key.
func (pl *GangPack) placedDomains(pod *v1.Pod, pin *plan.Pin, nodeName string) map[string]string {
	out := map[string]string{}
	infos := pl.handle.SnapshotSharedLister().NodeInfos()
	if all, err := infos.List(); err == nil {
		for _, m := range pl.ledger.Placed(pin.Gang, all) {
			out[m.Pod.Name] = m.Domain
		}
	}
	domain := ""
	if ni, err := infos.Get(nodeName); err == nil && ni.Node() != nil {
		domain = ni.Node().Labels[pin.Gang.TopologyKey]
	}
	out[pod.Name] = domain
	return out
}

// formationStart is the creation time of the gang's minMember-th oldest live member (the
// newest when fewer exist).
func (pl *GangPack) formationStart(g gang.Info) (time.Time, bool) {
	pods, err := pl.members.List(g.Namespace, g.Name)
	if err != nil {
		return time.Time{}, false
	}
	return quality.NthCreated(pods, g.MinMember)
}
