package gangpack

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// preemption is the plugin's side of preempt.Evaluator (preempt.Interface): planning answers whether a
// gang lacks room and how to hold a freed domain; the ledger unwinds and pins.
type preemption struct{ pl *GangPack }

func (x preemption) Shortfall(logger klog.Logger, pod *v1.Pod, all []fwk.NodeInfo) (*gang.Shortfall, *gang.RoomComing) {
	pl := x.pl
	_, name, _ := gang.Of(pod)
	if pl.podGroups == nil {
		return nil, nil
	}
	pg, err := pl.podGroups.Get(pod.Namespace, name)
	if err != nil || pg == nil {
		return nil, nil
	}
	info, st := gang.Interpret(pl.args, pod, pg)
	if st != nil {
		return nil, nil
	}
	return pl.planner.LacksRoom(logger, pod, info, all, pl.ledger.Now())
}

func (x preemption) UnitOf() func(*v1.Pod) string { return x.pl.groupUnitOf() }

func (x preemption) Release(logger klog.Logger, key string) {
	x.pl.ledger.Unwind(logger, key, placement.AnyID, gang.CausePreempted, false)
}

func (x preemption) Hold(logger klog.Logger, sf *gang.Shortfall, nodes []topology.Node, domain string, victims []*v1.Pod) {
	req := x.pl.planner.HoldRequest(sf, nodes, domain, victims)
	c, outcome := x.pl.ledger.Pin(req, sf.Info, "")
	switch {
	case outcome == placement.HeldByOther:
		logger.V(4).Info("gangpack.PostFilter.preempt_hold_blocked", "gang", sf.Info.Key, "domain", domain)
	case outcome == placement.AlreadyPinned && c.Key == req.Key && c.Domain == domain:
		// A degraded gang repaired in its own domain: its pin grows to the room the victims
		// give back, so nothing else takes it while they terminate.
		if !x.pl.ledger.Reserve(logger, c.Gang, c.ID, req.Reserved, req.Capacity) {
			logger.V(4).Info("gangpack.PostFilter.preempt_hold_blocked", "gang", sf.Info.Key, "domain", domain)
		}
	}
}

func (x preemption) Pins() []placement.Commitment { return x.pl.ledger.Pins() }

func (x preemption) Go(f func()) { x.pl.ledger.Go(f) }

func (x preemption) WakeBlockedAfter(preemptor types.UID, d time.Duration) {
	x.pl.ledger.WakeBlockedAfter(preemptor, d)
}

// groupUnitOf names the victim unit of a gang member's placement group ("group:{ns}/{group}"),
// or "" when its gang has none: a placement group's partners are one victim unit. A partner
// whose PodGroup was deleted stays in the group its pods' label names, so its placed members
// are never evicted apart from the partners (nor the partners apart from them).
func (pl *GangPack) groupUnitOf() func(*v1.Pod) string {
	if pl.args.PlacementGroupLabel == "" || pl.podGroups == nil {
		return nil
	}
	seen := map[string]string{}
	return func(q *v1.Pod) string {
		key, name, _ := gang.Of(q)
		if g, ok := seen[key]; ok {
			return g
		}
		g := ""
		pg, err := pl.podGroups.Get(q.Namespace, name)
		if err != nil {
			pg = nil // not found: the pod's label decides
		}
		if v := gang.GroupNameOf(pl.args, q, pg); v != "" {
			g = "group:" + q.Namespace + "/" + v
		}
		seen[key] = g
		return g
	}
}
