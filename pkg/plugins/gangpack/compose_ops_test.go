package gangpack

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// The composition test's operations: the events a sequence is made of, and one scheduling
// cycle as kube-scheduler runs it.

// apply carries out one event.
func (s *sim) apply(e composeEvent) {
	switch e.op {
	case "node":
		if len(s.nodes) < 12 {
			s.addNode(e.a%4, 1+e.b%2)
		}
	case "gang":
		s.addGang(e)
	case "pod":
		p := standalone(fmt.Sprintf("s%d", len(s.pods)))
		if s.dra && e.b%2 == 1 {
			simChannel(p)
		}
		s.addPod(prio(p, int32(e.a%3*10)))
	case "sched":
		if sp := s.nextActive(e.a); sp != nil {
			s.schedOne(sp, e.b)
		}
	case "bind":
		if l := s.inState(stAllowed); len(l) > 0 {
			s.bind(l[e.a%len(l)], e.d < 3)
		}
	case "advance":
		s.advance(time.Duration(10+e.a%600) * time.Second)
	case "delete":
		s.deleteOne(e)
	case "ungate":
		if l := s.inState(stGated); len(l) > 0 {
			sp := l[e.a%len(l)]
			q := sp.pod.DeepCopy()
			q.Spec.SchedulingGates = nil
			s.updatePod(sp, q)
			sp.state = stActive
		}
	case "relabel", "nodedel", "notready", "nodefail":
		s.nodeOp(e)
	case "minmember", "pgdel":
		s.podGroupOp(e)
	case "restart":
		if e.c < 2 { // half the restarts find a stale nomination too
			s.staleNomination(e)
		}
		s.restart()
	}
	s.afterPlugin()
}

// addGang creates a PodGroup (or two partner PodGroups of one placement group) and its
// members: size 1-4, minMember 1-size, priority 0/10/20; flags in d: 1 hard spread, 2 a
// gated member, 4 a 1200 s timeout, 8 partners.
func (s *sim) addGang(e composeEvent) {
	size := 1 + e.a%4
	minMember := 1 + e.b%size
	names := []string{fmt.Sprintf("g%d", len(s.pgs))}
	group := ""
	if e.d&8 != 0 {
		group = fmt.Sprintf("p%d", len(s.pgs))
		names = []string{names[0] + "a", names[0] + "b"}
		size, minMember = min(size, 2), min(minMember, 2)
	}
	for _, name := range names {
		pg := podGroup(name, int32(minMember))
		pg.CreationTimestamp = metav1.NewTime(s.now)
		if e.d&4 != 0 {
			pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](1200)
		} else {
			pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](300)
		}
		if group != "" {
			pg.Labels = map[string]string{testGroupLabel: group}
			pg.Annotations = map[string]string{testGroupLabel + gang.GroupSizeSuffix: "2", testGroupLabel + gang.GroupTopologySuffix: testZoneKey}
		}
		s.pgs = append(s.pgs, pg)
		if err := s.pgIdx.Add(pg); err != nil {
			s.t.Fatal(err)
		}
		for i := 0; i < size; i++ {
			p := prio(gangMember(fmt.Sprintf("%s-%d", name, i), name, 1), int32(e.c%3*10))
			if s.dra && e.b%2 == 1 {
				simChannel(p)
			}
			if group != "" {
				p.Labels[testGroupLabel] = group
			}
			if e.d&1 != 0 {
				p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
					WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{PodGroupLabel: name}}}}
			}
			if e.d&2 != 0 && i == size-1 {
				p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/gate"}}
			}
			s.addPod(p)
		}
		s.podGroupEvent(nil, pg)
	}
}

func (s *sim) inState(st podState) []*simPod {
	var out []*simPod
	for _, sp := range s.pods {
		if sp.state == st {
			out = append(out, sp)
		}
	}
	return out
}

// nextActive picks among the active pods of the highest priority, as the queue pops them.
func (s *sim) nextActive(k int) *simPod {
	var top []*simPod
	best := int32(-1 << 30)
	for _, sp := range s.inState(stActive) {
		if sp.backoff.After(s.now) {
			continue
		}
		switch p := corev1helpers.PodPriority(sp.pod); {
		case p > best:
			top, best = []*simPod{sp}, p
		case p == best:
			top = append(top, sp)
		}
	}
	if len(top) == 0 {
		return nil
	}
	return top[k%len(top)]
}

// schedOne is one scheduling cycle of the pod, as kube-scheduler runs it.
func (s *sim) schedOne(sp *simPod, pick int) {
	s.resnap()
	s.chk.preemptor, s.cycle, s.inflight, sp.woken, sp.nomOK = sp, sp, nil, false, "" // popped: no-phantom judges its nomination anew
	defer func() { s.chk.preemptor, s.cycle, s.inflight = nil, nil, nil }()
	cs := framework.NewCycleState()
	all := s.nodeInfos()
	res, st := s.pl.PreFilter(s.ctx, cs, sp.pod, all)
	s.afterPlugin()
	if !st.IsSuccess() {
		if st.Code() == fwk.Error { // not a FitError: clearNominatedNode (schedule_one.go:161-165, 495-497)
			s.nominate(sp, "")
			return // backoff: retried as it is
		}
		m := framework.NewDefaultNodeToStatus()
		pres, pst := s.pl.PostFilter(s.ctx, cs, sp.pod, m)
		s.tracef("%s PreFilter: %v; PostFilter: %v", sp.pod.Name, st, pst)
		s.nominated(sp, pres)
		s.afterPlugin()
		s.requeueRejected(sp, true, false)
		return
	}
	feasible, byGang, byFit, m := s.filter(cs, sp, all, res)
	if len(feasible) == 0 {
		pres, pst := s.pl.PostFilter(s.ctx, cs, sp.pod, m)
		s.tracef("%s Filter: none of %v fits; PostFilter: %v", sp.pod.Name, res, pst)
		s.nominated(sp, pres)
		s.afterPlugin()
		s.requeueRejected(sp, true, byFit || !byGang)
		return
	}
	node := feasible[pick%len(feasible)]
	ac := sp.assume(node)
	if st := s.pl.Reserve(s.ctx, cs, ac, node); !st.IsSuccess() {
		s.pl.Unreserve(s.ctx, cs, ac, node)
		s.failureHandler(sp, ac)
		s.afterPlugin()
		return
	}
	n := s.node(node)
	sp.node, sp.cs, sp.state = node, cs, stWaiting
	sp.placed = map[string]string{testKey: n.Labels[testKey], testZoneKey: n.Labels[testZoneKey]}
	s.resnap()
	st, timeout := s.pl.Permit(s.ctx, cs, ac, node)
	s.tracef("%s on %s: Permit %v", sp.pod.Name, node, st)
	switch st.Code() {
	case fwk.Success:
		s.admitted(sp)
	case fwk.Wait:
		sp.waiter = s.h.register(ac)
		sp.deadline = s.now.Add(min(timeout, gang.MaxPermitWait))
		// The binding goroutine PATCHes the node as the nomination before WaitOnPermit
		// (schedule_one.go:281-300), through the API only: its assumed copy keeps the
		// popped pod's, and the queue ignores the update of an assumed pod (inNominator).
		s.nominate(sp, node)
	default: // RunPermitPlugins rejected (schedule_one.go:233-255)
		s.unassume(sp)
		s.pl.Unreserve(s.ctx, cs, ac, node)
		s.podEvent(assumed(sp.pod, node), nil, true)
		s.failureHandler(sp, ac)
		s.requeueRejected(sp, true, false)
	}
	s.afterPlugin()
}

// filter runs the simulated default filters (taints, GPUs, hard spread on hostnames) and the
// plugin's Filter on the PreFilter candidates.
func (s *sim) filter(cs fwk.CycleState, sp *simPod, all []fwk.NodeInfo, res *fwk.PreFilterResult) ([]string, bool, bool, *framework.NodeToStatus) {
	m := framework.NewDefaultNodeToStatus()
	var feasible []string
	byGang, byFit := false, false
	nominated := s.nominatedByNode()
	for _, ni := range all {
		n := ni.Node()
		if res != nil && !res.AllNodes() && !res.NodeNames.Has(n.Name) {
			continue
		}
		if st, fit := s.filterNode(cs, sp, ni, nominated[n.Name]); !st.IsSuccess() {
			m.Set(n.Name, st)
			byFit, byGang = byFit || fit, byGang || !fit
			continue
		}
		feasible = append(feasible, n.Name)
	}
	s.afterPlugin()
	return feasible, byGang, byFit, m
}

func (s *sim) defaultFilters(sp *simPod, ni fwk.NodeInfo) *fwk.Status {
	n := ni.Node()
	if len(n.Spec.Taints) > 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint")
	}
	q := n.Status.Allocatable[v1.ResourceName(testGPU)]
	free := q.Value()
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		free -= gang.Request(p)[testGPU]
		if gang.HardSpread(sp.pod) && p.DeletionTimestamp == nil && p.Labels[PodGroupLabel] == sp.pod.Labels[PodGroupLabel] {
			return fwk.NewStatus(fwk.Unschedulable, "node(s) didn't match pod topology spread constraints")
		}
	}
	if free < gang.Request(sp.pod)[testGPU] {
		return fwk.NewStatus(fwk.Unschedulable, "Insufficient "+testGPU)
	}
	return s.channelFilter(sp, n.Name)
}

// bind binds an admitted pod, or fails its binding (then it is unreserved and retried).
func (s *sim) bind(sp *simPod, fail bool) {
	if fail || s.node(sp.node) == nil { // handleBindingCycleError (schedule_one.go:357-388)
		s.unassume(sp)
		s.pl.Unreserve(s.ctx, sp.cs, sp.copy, sp.node)
		s.podEvent(assumed(sp.pod, sp.node), nil, true)
		s.failureHandler(sp, sp.copy)
		s.afterPlugin()
		return
	}
	q := sp.pod.DeepCopy()
	q.Spec.NodeName = sp.node
	sp.state = stBound
	s.updatePod(sp, q)
	s.resnap()
	s.pl.PostBind(s.ctx, sp.cs, q, sp.node)
	s.podEvent(nil, q, false)
	s.afterPlugin()
}

// deleteOne deletes a pod: gracefully (Terminating for d*20 s) when bound and d > 0, else at once.
func (s *sim) deleteOne(e composeEvent) {
	var live []*simPod
	for _, sp := range s.pods {
		if sp.state != stGone && sp.state != stTerminating {
			live = append(live, sp)
		}
	}
	if len(live) == 0 {
		return
	}
	sp := live[e.a%len(live)]
	if sp.state == stBound && e.d > 0 {
		s.terminate(sp, e.d*20)
		return
	}
	s.removePod(sp)
}

// replace creates a replacement for each lost gang member, as its controller would after a
// node failure: the same labels, priority and requests, a new name and UID, pending.
func (s *sim) replace(lost []*simPod) {
	for _, sp := range lost {
		if gangKey(sp) == "" {
			continue
		}
		s.replacements++
		q := sp.pod.DeepCopy()
		q.Name = fmt.Sprintf("%s-r%d", sp.pod.Name, s.replacements)
		q.UID = types.UID("uid-" + q.Name)
		q.Spec.NodeName, q.DeletionTimestamp, q.ResourceVersion = "", nil, ""
		q.Status = v1.PodStatus{}
		s.addPod(q)
	}
}

// nodeOp relabels (to another clique), deletes, or toggles NotReady on a node; nodefail also
// replaces the gang members it lost.
func (s *sim) nodeOp(e composeEvent) {
	if len(s.nodes) == 0 {
		return
	}
	i := e.a % len(s.nodes)
	old := s.nodes[i]
	n := old.DeepCopy()
	switch e.op {
	case "relabel":
		n.Labels[testKey] = fmt.Sprintf("c%d", e.b%4)
	case "notready":
		if len(n.Spec.Taints) > 0 {
			n.Spec.Taints = nil
		} else {
			n.Spec.Taints = []v1.Taint{{Key: notReadyTaint, Effect: v1.TaintEffectNoSchedule}}
		}
	case "nodedel", "nodefail":
		s.nodes = append(s.nodes[:i:i], s.nodes[i+1:]...)
		var lost []*simPod
		for _, sp := range s.pods { // the pod GC deletes the node's bound pods
			if sp.node == n.Name && (sp.state == stBound || sp.state == stTerminating) {
				s.removePod(sp)
				lost = append(lost, sp)
			}
		}
		s.resnap()
		s.nodeEvent(old, nil)
		if e.op == "nodefail" {
			s.replace(lost)
		}
		return
	}
	s.nodes[i] = n
	s.resnap()
	s.nodeEvent(old, n)
}

// podGroupOp changes a PodGroup's minMember (1-4) or deletes it.
func (s *sim) podGroupOp(e composeEvent) {
	var live []string
	for _, pg := range s.pgs {
		if s.podGroup(pg.Name) != nil {
			live = append(live, pg.Name)
		}
	}
	if len(live) == 0 {
		return
	}
	old := s.podGroup(live[e.a%len(live)])
	if e.op == "pgdel" {
		if err := s.pgIdx.Delete(old); err != nil {
			s.t.Fatal(err)
		}
		s.podGroupEvent(old, nil)
		return
	}
	n := old.DeepCopy()
	n.Spec.MinMember = int32(1 + e.b%4)
	if err := s.pgIdx.Update(n); err != nil {
		s.t.Fatal(err)
	}
	s.podGroupEvent(old, n)
}
