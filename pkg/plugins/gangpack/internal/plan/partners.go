package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Partner placement groups (docs/design.md, "Partner placement groups"): several gangs,
// each with its own PodGroup, minMember, topology key and timeout, placed together, all or
// nothing. A gang is a partner when its PodGroup (or the pod) carries the label named by the
// argument placementGroupLabel; the value names the group {ns}/{value}. The PodGroup's
// annotations {label}-size (how many PodGroups the group has) and {label}-topology-key (the
// level at which the partners sit together; default: the gang's own topology key) must agree
// across the partners.
//
//   - partners.go: what a PodGroup says about its group, listing the partners, the gate;
//   - partners_plan.go: planning and pinning the whole group at once;
//   - partners_anchor.go: the group domain pinned and placed partners fix;
//   - partners_permit.go: the cross-partner Permit gate, group records and cascading unwinds.

// Partner is one gang of a placement group as the gate saw it.
type Partner struct {
	PodGroup *schedv1alpha1.PodGroup
	Info     gang.Info // valid when OK
	OK       bool      // the PodGroup is valid (gang.Interpret passed)
}

// partnerPodGroups lists the group's PodGroups: those labelled with the group, and those
// whose member pods carry the label. Sorted by name.
func (pl *Planner) partnerPodGroups(g *gang.GroupRef) ([]*schedv1alpha1.PodGroup, error) {
	sel := labels.SelectorFromSet(labels.Set{pl.args.PlacementGroupLabel: g.Name})
	byName := map[string]*schedv1alpha1.PodGroup{}
	list, err := pl.podGroups.List(g.Namespace, sel)
	if err != nil {
		return nil, err
	}
	for _, pg := range list {
		byName[pg.Name] = pg
	}
	pods, err := pl.members.Pods(g.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	for _, q := range pods {
		_, name, ok := gang.Of(q)
		if !ok || byName[name] != nil {
			continue
		}
		if pg, err := pl.podGroups.Get(g.Namespace, name); err == nil && pg != nil {
			byName[name] = pg
		}
	}
	out := make([]*schedv1alpha1.PodGroup, 0, len(byName))
	for _, pg := range byName {
		out = append(out, pg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Partners returns the group's partners, or the status that parks the pod when the
// PodGroups disagree on the group's size or key.
func (pl *Planner) Partners(self gang.Info) ([]Partner, *fwk.Status) {
	g := self.Group
	pgs, err := pl.partnerPodGroups(g)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	out := make([]Partner, 0, len(pgs))
	for _, pg := range pgs {
		// found through the label on the PodGroup or on its pods: the probe stands for a pod
		probe := &v1.Pod{}
		probe.Namespace = pg.Namespace
		probe.Labels = map[string]string{pl.args.PlacementGroupLabel: g.Name}
		info, st := gang.Interpret(pl.args, probe, pg)
		if st != nil && info.Group == nil {
			// an invalid partner still tells whether it agrees on the group
			info.Group, _ = gang.InterpretGroup(pl.args, probe, pg, gang.TopologyKeyOf(pl.args, pg))
		}
		if info.Group == nil || info.Group.Name != g.Name {
			// its pods carry the label but its PodGroup names another group
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupDisagree(g.Key, pl.args.PlacementGroupLabel+gang.GroupSizeSuffix))
		}
		if info.Group.Size != g.Size {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupDisagree(g.Key, pl.args.PlacementGroupLabel+gang.GroupSizeSuffix))
		}
		if info.Group.TopologyKey != g.TopologyKey {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupDisagree(g.Key, pl.args.PlacementGroupLabel+gang.GroupTopologySuffix))
		}
		out = append(out, Partner{PodGroup: pg, Info: info, OK: st == nil})
	}
	if len(out) > g.Size {
		return nil, fwk.NewStatus(fwk.Unschedulable, msg.GroupTooMany(g.Key, pl.args.PlacementGroupLabel+gang.GroupSizeSuffix, len(out), g.Size))
	}
	return out, nil
}

// ready reports whether a partner has its minMember live members (placed or not).
func (pl *Planner) partnerReady(pt Partner) bool {
	if !pt.OK {
		return false
	}
	pods, err := pl.members.List(pt.Info.Namespace, pt.Info.Name)
	if err != nil {
		return false
	}
	n := 0
	for _, q := range pods {
		if gang.Live(q) {
			n++
		}
	}
	return n >= pt.Info.MinMember
}

// groupGate parks the pod until every PodGroup of its group exists and has its minMember
// members (docs/design.md §19, item 1). The planning that finds a waiting group complete wakes every partner's
// members. It records the partners for planning.
func (p *cycle) groupGate() *fwk.Status {
	g := p.info.Group
	pts, st := p.pl.Partners(p.info)
	if st != nil {
		p.groupWaits(GroupDisagrees)
		return st
	}
	ready := 0
	for _, pt := range pts {
		if p.pl.partnerReady(pt) {
			ready++
		}
	}
	if ready < g.Size || len(pts) < g.Size {
		p.groupWaits(GroupIncomplete)
		p.logger.V(4).Info("gangpack.group.wait", "pod", klog.KObj(p.pod), "group", g.Key, "ready", ready, "size", g.Size)
		return fwk.NewStatus(fwk.Unschedulable, msg.GroupWait(g.Key, ready, g.Size))
	}
	p.partners = pts
	if p.fx.GroupReady(g.Key) {
		n := p.fx.ActivateGroup(p.logger, gangsOf(pts), p.pod.Name)
		p.groupWoken = true
		p.logger.V(4).Info("gangpack.group.complete", "group", g.Key, "activated", n)
	}
	return nil
}

// Why a group waits (groupStates).
const (
	GroupIncomplete = "incomplete"
	GroupDisagrees  = "disagrees"
)

// groupWaits records why the pod's group waits. When the reason changes (the partners
// stopped or started disagreeing), every partner's parked members are woken to see the new
// reason; the same reason wakes nobody, so members never wake each other in turn.
func (p *cycle) groupWaits(why string) {
	g := p.info.Group
	if prev, had := p.fx.GroupWaits(g.Key, why); had && prev != why {
		pgs, err := p.pl.partnerPodGroups(g)
		if err != nil {
			return
		}
		pts := make([]Partner, len(pgs))
		for i, pg := range pgs {
			pts[i] = Partner{PodGroup: pg}
		}
		n := p.fx.ActivateGroup(p.logger, gangsOf(pts), p.pod.Name)
		p.logger.V(4).Info("gangpack.group.reason_changed", "group", g.Key, "reason", why, "activated", n)
	}
}

// gangsOf names the partners' gangs.
func gangsOf(pts []Partner) []types.NamespacedName {
	out := make([]types.NamespacedName, len(pts))
	for i, pt := range pts {
		out[i] = types.NamespacedName{Namespace: pt.PodGroup.Namespace, Name: pt.PodGroup.Name}
	}
	return out
}
