package gangpack

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// Degraded gangs (docs/operations.md, "An instance lost a node"): a gang bound in a domain
// with fewer than minMember live members while replacements are pending. Planning names the
// wait; here PostFilter tells the PodGroup once when the gang cannot be repaired in its
// domain, and GC publishes the gauge.

// reportUnrepairable emits the GangDegraded Warning on the PodGroup of the cycle's degraded
// gang (plan.ReadDegraded) when its domain cannot take the missing members: no room is coming
// back from Terminating pods, and preemption is off or found nothing to evict (st is
// PostFilter's preemption status). Once per gang and domain until the gang is whole again.
func (pl *GangPack) reportUnrepairable(logger klog.Logger, cs fwk.CycleState, st *fwk.Status) {
	d := plan.ReadDegraded(cs)
	if d == nil || d.Coming {
		return
	}
	if pl.args.Preemption && (st == nil || !msg.NoCandidate(st.Message())) {
		return // repaired by preemption, or waiting for it
	}
	if !pl.ledger.ReportDegraded(d.Gang, d.Domain) || pl.podGroups == nil {
		return
	}
	note := msg.Degraded(d.Gang, d.Domain, d.Room, d.Missing)
	if st != nil && pl.args.Preemption {
		note += st.Message()
	}
	logger.V(2).Info("Gang degraded and not repairable in its domain", "gang", d.Gang, "domain", d.Domain, "room", d.Room, "missing", d.Missing)
	ns, name, _ := cache.SplitMetaNamespaceKey(d.Gang)
	pg, err := pl.podGroups.Get(ns, name)
	if err != nil || pg == nil {
		return
	}
	if rec := pl.handle.EventRecorder(); rec != nil {
		rec.Eventf(podGroupRef(pg), nil, v1.EventTypeWarning, msg.ReasonGangDegraded, "Scheduling", "%s", note)
	}
}

// podGroupRef is a copy of the PodGroup with its kind set, so the event recorder can refer
// to it without the scheduler's scheme knowing the type.
func podGroupRef(pg *schedv1alpha1.PodGroup) *schedv1alpha1.PodGroup {
	c := pg.DeepCopy()
	c.APIVersion, c.Kind = schedv1alpha1.SchemeGroupVersion.String(), "PodGroup"
	return c
}

// refreshDegraded counts the degraded gangs among the live ones, per topology key, for
// ome_scheduler_degraded_gangs, and forgets the GangDegraded reports of gangs whole again.
func (pl *GangPack) refreshDegraded(liveGangs map[string]struct{}) {
	assumed := map[types.UID]struct{}{}
	for _, a := range pl.ledger.AssumedMembers() {
		assumed[a.UID] = struct{}{}
	}
	counts := map[string]int{pl.args.TopologyKey: 0}
	still := map[string]struct{}{}
	for key := range liveGangs {
		if topologyKey, ok := pl.degradedKey(key, assumed); ok {
			counts[topologyKey]++
			still[key] = struct{}{}
		}
	}
	delete(counts, "")
	metrics.SetDegraded(counts)
	pl.ledger.KeepDegraded(still)
}

// degradedKey reports whether the gang is degraded, with its topology key.
func (pl *GangPack) degradedKey(key string, assumed map[types.UID]struct{}) (string, bool) {
	ns, name, _ := strings.Cut(key, "/")
	pods, err := pl.members.List(ns, name)
	if err != nil || pl.podGroups == nil {
		return "", false
	}
	pg, err := pl.podGroups.Get(ns, name)
	if err != nil || pg == nil {
		return "", false
	}
	i := slices.IndexFunc(pods, gang.Live)
	if i < 0 {
		return "", false
	}
	info, st := gang.Interpret(pl.args, pods[i], pg)
	if st != nil {
		return "", false
	}
	if degraded, _ := gang.Degraded(pods, info.MinMember, assumed); !degraded {
		return "", false
	}
	return info.TopologyKey, true
}
