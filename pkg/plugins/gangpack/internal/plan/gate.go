package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/quality"
)

// gate decides whether the gang may be planned now: its placed members are in one domain,
// all its members exist, and the pod does not wait for a sibling it must follow. It returns
// the status that parks the pod, or nil.
func (p *cycle) gate() *fwk.Status {
	key := p.info.Key
	if p.split() {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg.Split(key))
	}
	if st := p.collectTemplates(); st != nil {
		return st
	}
	placedPods := p.placedPods()
	if s := gang.WaitsForSibling(p.pod, p.templates[1:], placedPods); s != nil {
		p.logger.V(4).Info("gangpack.pinGang.sibling_wait", "pod", klog.KObj(p.pod), "gang", key, "sibling", klog.KObj(s))
		p.fx.Await(s, p.pod)
		return fwk.NewStatus(fwk.Unschedulable, msg.SiblingWait(s.Namespace, s.Name))
	}
	if a := p.spreadAnchorFirst(placedPods); a != nil {
		p.logger.V(4).Info("gangpack.pinGang.spread_anchor_wait", "pod", klog.KObj(p.pod), "gang", key, "anchor", klog.KObj(a))
		p.fx.Await(a, p.pod)
		return fwk.NewStatus(fwk.Unschedulable, msg.AnchorWait(a.Namespace, a.Name))
	}
	return nil
}

// admit is PreFilter's gate: gate, and a split gang's refusal counted (placement_total).
func (p *cycle) admit() *fwk.Status {
	if p.split() {
		quality.CountSplitRefused()
	}
	return p.gate()
}

// spreadAnchorFirst returns the gang's first unplaced hard-spread anchor when the pod is not
// an anchor itself and that anchor could be placed now: the anchor chooses the domain.
func (p *cycle) spreadAnchorFirst(placedPods []*v1.Pod) *v1.Pod {
	if gang.HardSpread(p.pod) {
		return nil
	}
	for _, t := range p.templates[1:] {
		if !gang.HardSpread(t) {
			continue
		}
		if gang.WaitsForSibling(t, p.templates, placedPods) == nil {
			return t
		}
		return nil
	}
	return nil
}

// collectTemplates sets need and the templates (the pod first, then the gang's other live
// unplaced members by name), parks the pod until the gang has all its members, and wakes the
// gang once it has.
func (p *cycle) collectTemplates() *fwk.Status {
	pl, info := p.pl, p.info
	p.need = max(info.MinMember-len(p.placed), 1)
	pods, err := pl.members.List(info.Namespace, info.Name)
	if err != nil {
		return fwk.AsStatus(err)
	}
	others := make([]*v1.Pod, 0, len(pods))
	for _, q := range pods {
		if q.Name == p.pod.Name || !gang.Live(q) || q.Spec.NodeName != "" {
			continue
		}
		if _, placed := p.placedSet[q.Name]; placed {
			continue
		}
		others = append(others, q)
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	p.templates = append([]*v1.Pod{p.pod}, others...)
	if len(p.templates) < p.need {
		p.fx.MembersMissing(info.Key)
		return fwk.NewStatus(fwk.Unschedulable, msg.Templates(info.Key, len(p.templates), p.need))
	}
	if n, waited := p.fx.MembersComplete(p.logger, info, p.pod.Name, metrics.TriggerTemplatesComplete); waited {
		p.logger.V(4).Info("gangpack.templates.complete", "gang", info.Key, "activated", n)
	}
	return nil
}

// split reports members in more than one domain, or on a node without the label.
func (p *cycle) split() bool {
	domains := map[string]struct{}{}
	for _, m := range p.placed {
		if m.Domain == "" {
			return true
		}
		domains[m.Domain] = struct{}{}
	}
	return len(domains) > 1
}

func (p *cycle) placedPods() []*v1.Pod {
	out := make([]*v1.Pod, len(p.placed))
	for i, m := range p.placed {
		out[i] = m.Pod
	}
	return out
}
