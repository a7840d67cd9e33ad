package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Member room counted in DRA devices, on the real API server: DeviceClasses and per-node
// ResourceSlices as a node-local driver publishes them, members that ask for devices through
// ResourceClaimTemplates (no extended resource), kube-controller-manager's resourceclaim
// controller creating each member's claims, kube-scheduler's DynamicResources plugin
// allocating them. By CPU every clique takes every gang below.

const (
	gpuClass     = "gpu.example.com"
	channelClass = "channel.example.com"
	// draTestLabel marks the cluster-scoped objects (ResourceSlices) of one test's namespace.
	draTestLabel = "ome.io/test-namespace"
)

// newDRAEnv is newEnv with the DeviceClasses gpu.example.com and channel.example.com and a
// kube-controller-manager running the resourceclaim controller. Its cleanup (before
// newEnv's) stops the scheduler, deletes the test's pods, claims, templates and slices and
// the classes, and stops kube-controller-manager, printing its last log lines when the test
// failed.
func newDRAEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	for _, c := range []string{gpuClass, channelClass} {
		if _, err := e.cp.Client.ResourceV1().DeviceClasses().Create(e.ctx, devenv.NewDeviceClass(c), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create DeviceClass %s: %v", c, err)
		}
	}
	kcm, err := devenv.StartClaimController(e.cp, "kube-controller-manager-"+e.ns)
	if err != nil {
		t.Fatalf("start kube-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		e.stopScheduler()
		bg := context.Background()
		c := e.cp.Client
		_ = c.CoreV1().Pods(e.ns).DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		_ = c.ResourceV1().ResourceClaims(e.ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.ResourceV1().ResourceClaimTemplates(e.ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.ResourceV1().ResourceSlices().DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: draTestLabel + "=" + e.ns})
		for _, dc := range []string{gpuClass, channelClass} {
			_ = c.ResourceV1().DeviceClasses().Delete(bg, dc, metav1.DeleteOptions{})
		}
		kcm.Stop(10 * time.Second)
		if t.Failed() {
			if b, err := os.ReadFile(kcm.LogPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) > 30 {
					lines = lines[len(lines)-30:]
				}
				t.Logf("kube-controller-manager log (last lines):\n%s", strings.Join(lines, "\n"))
			}
		}
	})
	return e
}

// draNode is what one node of a DRA clique has: CPU ("" = NodeSpec's default) and the devices
// its drivers publish.
type draNode struct {
	cpu            string
	gpus, channels int
}

// draDomain creates n Ready nodes labelled domainKey=value, without extended resources, each
// with a ResourceSlice of gpu.example.com (gpu-0…) and, with channels, one of
// channel.example.com (channel-0…). It returns the nodes' names.
func (e *env) draDomain(value string, n int, spec draNode) []string {
	e.t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		node := e.node(devenv.NodeSpec{Name: fmt.Sprintf("%s-%d", value, i), CPU: spec.cpu, Labels: map[string]string{domainKey: value}})
		e.slice(gpuClass, node, "gpu", spec.gpus)
		if spec.channels > 0 {
			e.slice(channelClass, node, "channel", spec.channels)
		}
		out = append(out, node)
	}
	return out
}

func (e *env) slice(driver, node, prefix string, n int) {
	e.t.Helper()
	s := devenv.NewNodeSlice(driver, node, prefix, n, map[string]string{draTestLabel: e.ns})
	if _, err := e.cp.Client.ResourceV1().ResourceSlices().Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create ResourceSlice %s: %v", s.Name, err)
	}
}

func (e *env) claimTemplate(name string, requests ...resourceapi.DeviceRequest) {
	e.t.Helper()
	if _, err := e.cp.Client.ResourceV1().ResourceClaimTemplates(e.ns).Create(e.ctx, devenv.NewClaimTemplate(e.ns, name, requests...), metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create ResourceClaimTemplate %s: %v", name, err)
	}
}

// draGang creates n members <group>-<i> requesting cpu and the claims.
func (e *env) draGang(group string, n int, cpu string, claims ...devenv.PodClaim) []string {
	e.t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		e.pod(devenv.PodSpec{Name: name, Group: group, CPU: cpu, Claims: claims})
		names = append(names, name)
	}
	return names
}

// allocatedDevices asserts that the pod's generated claim for entry is allocated on node (its
// node selector matches node, every device comes from node's pool of driver) and reserved for
// the pod, and returns its devices as driver/pool/device.
func (e *env) allocatedDevices(pod, entry, node, driver string) []string {
	e.t.Helper()
	p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var claimName string
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == entry && s.ResourceClaimName != nil {
			claimName = *s.ResourceClaimName
		}
	}
	if claimName == "" {
		e.t.Fatalf("pod %s: no generated claim for %q in status %+v", pod, entry, p.Status.ResourceClaimStatuses)
	}
	c, err := e.cp.Client.ResourceV1().ResourceClaims(e.ns).Get(e.ctx, claimName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	a := c.Status.Allocation
	if a == nil {
		e.t.Fatalf("pod %s on %s: claim %s not allocated", pod, node, claimName)
	}
	n, err := e.cp.Client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if a.NodeSelector == nil {
		e.t.Errorf("pod %s: claim %s allocated without a node selector", pod, claimName)
	} else if sel, err := nodeaffinity.NewNodeSelector(a.NodeSelector); err != nil || !sel.Match(n) {
		e.t.Errorf("pod %s on %s: claim %s allocated for nodes %v (err %v)", pod, node, claimName, a.NodeSelector, err)
	}
	var out []string
	for _, r := range a.Devices.Results {
		if r.Driver != driver || r.Pool != node {
			e.t.Errorf("pod %s on %s: claim %s got %s/%s/%s, want a device of %s from pool %s", pod, node, claimName, r.Driver, r.Pool, r.Device, driver, node)
		}
		out = append(out, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	if !slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
		e.t.Errorf("pod %s: claim %s reserved for %v, not for the pod", pod, claimName, c.Status.ReservedFor)
	}
	return out
}

// Best fit by devices. Members ask for 8 CPUs and two GPU devices each; a node takes at most
// the whole gang (4). By CPU, c1 (one node, 64 CPUs) has room for 4 members, c2 (two nodes of
// 64 CPUs) for 8 and c4 (four nodes of 16 CPUs) for 8: CPU alone picks c1 and ties c2 with
// c4. By devices, c1 (2 GPU devices) has room for 1, c2 (4 per node) for exactly 4 and c4 (4
// per node) for 8. The gang lands in c2, two members per node, each member's claim allocated
// there, in one pin and without an unwind.
func TestDRABestFitByDevices(t *testing.T) {
	e := newDRAEnv(t)
	e.draDomain("c1", 1, draNode{gpus: 2})
	c2 := e.draDomain("c2", 2, draNode{gpus: 4, channels: 1})
	e.draDomain("c4", 4, draNode{cpu: "16", gpus: 4, channels: 1})
	e.claimTemplate("gpu-2", devenv.ExactDevices("gpu", gpuClass, 2))
	e.startScheduler(devenv.Profile{})
	unwinds := metric(t, "ome_scheduler_gang_unwind_total", nil)
	pinned := map[string]string{"result": "pinned"}
	pins, _ := lookupMetric(t, "ome_scheduler_gang_pin_total", pinned)

	e.podGroup("g", 4, domainKey, 60)
	pods := e.draGang("g", 4, "8", devenv.PodClaim{Name: "gpu", Template: "gpu-2"})
	got := e.bound(60*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c2" {
		t.Fatalf("gang in %s (%v), want c2: the best fit by GPU devices (room: c1 1, c2 4, c4 8)", d, got)
	}
	perNode := map[string]int{}
	seen := map[string]string{}
	for _, pod := range pods {
		node := got[pod]
		perNode[node]++
		devs := e.allocatedDevices(pod, "gpu", node, gpuClass)
		if len(devs) != 2 {
			t.Errorf("pod %s: claim allocated %v, want 2 devices", pod, devs)
		}
		for _, d := range devs {
			if other, ok := seen[d]; ok {
				t.Errorf("device %s allocated to %s and %s", d, other, pod)
			}
			seen[d] = pod
		}
	}
	for _, n := range c2 {
		if perNode[n] != 2 {
			t.Errorf("members per node %v, want 2 on each of %v", perNode, c2)
		}
	}
	// The planning that chose c2 counted devices: room in members of g's shape.
	for d, want := range map[string]float64{"c1": 1, "c2": 4, "c4": 8} {
		if v := metric(t, memberRoom, inDomain(d)); v != want {
			t.Errorf("domain_member_room{%s} = %v, want %v", d, v, want)
		}
	}
	time.Sleep(time.Second) // an unwind or a second pin would show by now
	if d := metric(t, "ome_scheduler_gang_unwind_total", nil) - unwinds; d != 0 {
		t.Errorf("gang_unwind_total grew by %v, want 0", d)
	}
	if v, _ := lookupMetric(t, "ome_scheduler_gang_pin_total", pinned); v-pins != 1 {
		t.Errorf("gang_pin_total{result=pinned} grew by %v, want 1", v-pins)
	}
}

// A ComputeDomain-like shape: members ask for one GPU device and one channel device each (two
// claims from two templates), and every node publishes one channel, so a node takes one
// member. c2 (two nodes, 8 GPU devices) is the best fit by GPU devices for a gang of 3 but has
// two channels; the gang lands in c4, one member per node, each member's GPU and channel
// allocated on its node, without an unwind.
func TestDRAOneMemberPerChannel(t *testing.T) {
	e := newDRAEnv(t)
	e.draDomain("c2", 2, draNode{gpus: 4, channels: 1})
	c4 := e.draDomain("c4", 4, draNode{gpus: 4, channels: 1})
	e.claimTemplate("gpu-1", devenv.ExactDevices("gpu", gpuClass, 1))
	e.claimTemplate("channel", devenv.ExactDevices("channel", channelClass, 1))
	e.startScheduler(devenv.Profile{})
	unwinds := metric(t, "ome_scheduler_gang_unwind_total", nil)

	e.podGroup("cd", 3, domainKey, 60)
	pods := e.draGang("cd", 3, "1", devenv.PodClaim{Name: "gpu", Template: "gpu-1"}, devenv.PodClaim{Name: "channel", Template: "channel"})
	got := e.bound(60*time.Second, pods...)
	if d := e.oneDomain(got, domainKey); d != "c4" {
		t.Fatalf("gang in %s (%v), want c4: c2 has two channel devices for three members", d, got)
	}
	e.distinctNodes(got)
	for _, pod := range pods {
		node := got[pod]
		if !slices.Contains(c4, node) {
			t.Errorf("pod %s on %s, not a node of c4 %v", pod, node, c4)
		}
		if devs := e.allocatedDevices(pod, "gpu", node, gpuClass); len(devs) != 1 {
			t.Errorf("pod %s: GPU claim allocated %v, want 1 device", pod, devs)
		}
		if devs := e.allocatedDevices(pod, "channel", node, channelClass); !slices.Equal(devs, []string{channelClass + "/" + node + "/channel-0"}) {
			t.Errorf("pod %s: channel claim allocated %v, want %s's channel-0", pod, devs, node)
		}
	}
	for d, want := range map[string]float64{"c2": 2, "c4": 4} {
		if v := metric(t, memberRoom, inDomain(d)); v != want {
			t.Errorf("domain_member_room{%s} = %v, want %v", d, v, want)
		}
	}
	time.Sleep(time.Second)
	if d := metric(t, "ome_scheduler_gang_unwind_total", nil) - unwinds; d != 0 {
		t.Errorf("gang_unwind_total grew by %v, want 0", d)
	}
}

// Claims that cannot be counted: a template naming a DeviceClass that does not exist, for
// every member of gang "all" or for one member of gang "mixed", and a template that does not
// exist for one member of gang "orphan". Every member stays Pending and nothing is unwound.
// The gang's reason ("its members' devices cannot be counted", naming the culprit) is on the
// members whose own claims are fine. A member whose own claim names the missing class is
// refused by kube-scheduler's DynamicResources PreFilter first (the profile's multiPoint
// expansion runs the default plugins' PreFilter before OMEGangPack's), with the stock reason
// naming the class; so is every member of "all", whose gang is never planned. A member whose
// template does not exist gets no claim and waits in DynamicResources' PreEnqueue.
func TestDRAUncountableClaims(t *testing.T) {
	e := newDRAEnv(t)
	e.draDomain("c2", 2, draNode{gpus: 4, channels: 1})
	e.claimTemplate("gpu-1", devenv.ExactDevices("gpu", gpuClass, 1))
	e.claimTemplate("nvlink", devenv.ExactDevices("gpu", "nvlink.example.com", 1))
	e.startScheduler(devenv.Profile{})
	unwinds := metric(t, "ome_scheduler_gang_unwind_total", nil)

	gpu := devenv.PodClaim{Name: "gpu", Template: "gpu-1"}
	e.podGroup("all", 2, domainKey, 60)
	all := e.draGang("all", 2, "1", devenv.PodClaim{Name: "gpu", Template: "nvlink"})
	e.podGroup("mixed", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "mixed-0", Group: "mixed", CPU: "1", Claims: []devenv.PodClaim{gpu}})
	e.pod(devenv.PodSpec{Name: "mixed-1", Group: "mixed", CPU: "1", Claims: []devenv.PodClaim{{Name: "gpu", Template: "nvlink"}}})
	e.podGroup("orphan", 2, domainKey, 60)
	e.pod(devenv.PodSpec{Name: "orphan-0", Group: "orphan", CPU: "1", Claims: []devenv.PodClaim{gpu}})
	e.pod(devenv.PodSpec{Name: "orphan-1", Group: "orphan", CPU: "1", Claims: []devenv.PodClaim{{Name: "gpu", Template: "absent"}}})
	// The claims exist (the template's class is not checked when they are created): what
	// holds these members is scheduling, not the resourceclaim controller.
	members := append(slices.Clone(all), "mixed-0", "mixed-1", "orphan-0", "orphan-1")
	for _, p := range members[:len(members)-1] {
		if _, err := devenv.WaitClaimsCreated(e.ctx, e.cp, e.ns, p, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	m := e.message("mixed-0", "gang "+e.ns+"/mixed waits: its members' devices cannot be counted", 30*time.Second)
	if !strings.Contains(m, "nvlink.example.com") {
		t.Errorf("mixed-0: message %q does not name the missing class nvlink.example.com", m)
	}
	e.message("orphan-0", "gang "+e.ns+"/orphan waits: its members' devices cannot be counted: pod "+e.ns+`/orphan-1, resource claim "gpu": template "absent"`, 30*time.Second)
	for _, p := range append(slices.Clone(all), "mixed-1") {
		e.message(p, "request gpu: device class nvlink.example.com does not exist", 30*time.Second)
	}
	for _, p := range all {
		e.noMessage(p, "its members' devices cannot be counted")
	}
	e.staysPending(2*time.Second, members...)
	if p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, "orphan-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if len(p.Status.ResourceClaimStatuses) != 0 {
		t.Errorf("orphan-1 has claims %+v, want none (its template does not exist)", p.Status.ResourceClaimStatuses)
	}
	if d := metric(t, "ome_scheduler_gang_unwind_total", nil) - unwinds; d != 0 {
		t.Errorf("gang_unwind_total grew by %v, want 0", d)
	}
}

// The chart's RBAC on a real API server: the scheduler's ServiceAccount reads what counting
// DRA devices needs. system:kube-scheduler alone grants ResourceClaims, ResourceSlices and
// DeviceClasses but not ResourceClaimTemplates (without them the scheduler's template
// informer never syncs); the chart's {name}-extras ClusterRole adds get, list and watch on
// them, and nothing more.
func TestChartRBACReadsClaimTemplates(t *testing.T) {
	e := newEnv(t)
	out, err := devenv.HelmTemplate(e.ctx, devenv.HelmRender{Namespace: e.ns, Args: []string{"--show-only", "templates/rbac.yaml"}})
	if err != nil {
		t.Fatalf("render the chart's RBAC: %v", err)
	}
	var user string
	can := func(verb, resource string) bool {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + e.ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "resource.k8s.io", Version: "v1", Resource: resource, Verb: verb}}}
		got, err := e.cp.Client.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		return got.Status.Allowed
	}
	var roles []string
	var bindings []*rbacv1.ClusterRoleBinding
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode the chart's RBAC: %v", err)
		}
		b, _ := json.Marshal(obj)
		switch obj["kind"] {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			if err := json.Unmarshal(b, cr); err != nil {
				t.Fatal(err)
			}
			if _, err := e.cp.Client.RbacV1().ClusterRoles().Create(e.ctx, cr, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create ClusterRole %s: %v", cr.Name, err)
			}
			roles = append(roles, cr.Name)
		case "ClusterRoleBinding":
			crb := &rbacv1.ClusterRoleBinding{}
			if err := json.Unmarshal(b, crb); err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, crb)
		}
	}
	if len(bindings) == 0 || len(bindings[0].Subjects) != 1 {
		t.Fatalf("the chart's RBAC has no ClusterRoleBinding with one subject: %+v", bindings)
	}
	sa := bindings[0].Subjects[0]
	user = "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	t.Cleanup(func() {
		bg := context.Background()
		for _, b := range bindings {
			_ = e.cp.Client.RbacV1().ClusterRoleBindings().Delete(bg, b.Name, metav1.DeleteOptions{})
		}
		for _, r := range roles {
			_ = e.cp.Client.RbacV1().ClusterRoles().Delete(bg, r, metav1.DeleteOptions{})
		}
	})
	bind := func(keep func(*rbacv1.ClusterRoleBinding) bool) {
		t.Helper()
		for _, b := range bindings {
			if !keep(b) {
				continue
			}
			if _, err := e.cp.Client.RbacV1().ClusterRoleBindings().Create(e.ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create ClusterRoleBinding %s: %v", b.Name, err)
			}
		}
	}
	extras := func(b *rbacv1.ClusterRoleBinding) bool { return strings.HasSuffix(b.RoleRef.Name, "-extras") }
	// The RBAC authorizer answers from its informers: wait for a grant to show.
	waitCan := func(verb, resource string, want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for can(verb, resource) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s %s on resource.k8s.io %s: allowed=%v, want %v", user, verb, resource, !want, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	bind(func(b *rbacv1.ClusterRoleBinding) bool { return !extras(b) })
	for _, r := range []string{"resourceclaims", "resourceslices", "deviceclasses"} {
		for _, v := range []string{"get", "list", "watch"} {
			waitCan(v, r, true)
		}
	}
	if can("list", "resourceclaimtemplates") {
		t.Fatalf("%s lists resourceclaimtemplates without the chart's extras role: system:kube-scheduler grants it now, the extras rule may go", user)
	}
	bind(extras)
	for _, v := range []string{"get", "list", "watch"} {
		waitCan(v, "resourceclaimtemplates", true)
	}
	for _, v := range []string{"create", "update", "patch", "delete"} {
		if can(v, "resourceclaimtemplates") {
			t.Errorf("%s may %s resourceclaimtemplates", user, v)
		}
	}
}

// A gang whose members take a channel each preempts a lower-priority gang holding the channels
// of the only clique: the victims' pods go, the resourceclaim controller gives their devices
// back, and the high-priority gang binds there with the channels.
func TestDRAPreemptsLowerPriorityGang(t *testing.T) {
	e, c2, channel := lowChannelGang(t)
	before := preemptions(t, "gang", "preempted")
	e.podGroup("hi", 2, domainKey, 60)
	for i := 0; i < 2; i++ {
		e.prioPod(devenv.PodSpec{Name: fmt.Sprintf("hi-%d", i), Group: "hi", CPU: "100m", Claims: []devenv.PodClaim{channel}}, 100, false)
	}
	got := e.bound(60*time.Second, "hi-0", "hi-1")
	e.gone(20*time.Second, "low-0", "low-1")
	e.channelsIn(got, c2)
	if d := preemptions(t, "gang", "preempted") - before; d != 1 {
		t.Errorf("preemption_total{gang,preempted} grew by %v, want 1", d)
	}
}

// A placement group whose partners take a channel per member preempts for channels as one
// unit: the only clique with channels enough, c2, is held by a lower-priority gang with
// channel claims; prefill and decode (one member each) evict it and bind there, each member on
// its own node's channel.
func TestDRAGroupPreemptsLowerPriorityGang(t *testing.T) {
	e, c2, channel := lowChannelGang(t)
	before := preemptions(t, "gang", "preempted")
	for _, p := range []string{"prefill", "decode"} {
		e.partnerGroup(p, 1, "grp", "2", "")
		e.prioPod(devenv.PodSpec{Name: p + "-0", Group: p, CPU: "100m", Claims: []devenv.PodClaim{channel}}, 100, false)
	}
	got := e.bound(60*time.Second, "prefill-0", "decode-0")
	e.gone(20*time.Second, "low-0", "low-1")
	e.distinctNodes(got)
	e.channelsIn(got, c2)
	if d := preemptions(t, "gang", "preempted") - before; d != 1 {
		t.Errorf("preemption_total{gang,preempted} grew by %v, want 1 (the group preempts once)", d)
	}
}

// channelsIn checks that every placed pod is on a node of domain and that its channel claim
// was allocated that node's channel.
func (e *env) channelsIn(placed map[string]string, domain []string) {
	e.t.Helper()
	for pod, node := range placed {
		if !slices.Contains(domain, node) {
			e.t.Errorf("%s on %s, want a node of %v", pod, node, domain)
		}
		if devs := e.allocatedDevices(pod, "channel", node, channelClass); len(devs) != 1 || !strings.HasSuffix(devs[0], "/channel-0") {
			e.t.Errorf("%s: channel claim got %v, want its node's channel-0", pod, devs)
		}
	}
}

// lowChannelGang is the preemption tests' start: clique c2 of two nodes with one channel
// each, the scheduler with preemption on, and a priority-0 gang "low" of two members bound
// there, each with a channel claim from the template "channel" (returned, to be reused).
func lowChannelGang(t *testing.T) (*env, []string, devenv.PodClaim) {
	t.Helper()
	e := newDRAEnv(t)
	c2 := e.draDomain("c2", 2, draNode{channels: 1})
	e.claimTemplate("channel", devenv.ExactDevices("channel", channelClass, 1))
	e.startScheduler(preemptionProfile)
	channel := devenv.PodClaim{Name: "channel", Template: "channel"}
	e.podGroup("low", 2, domainKey, 60)
	for i := 0; i < 2; i++ {
		e.prioPod(devenv.PodSpec{Name: fmt.Sprintf("low-%d", i), Group: "low", CPU: "100m", Claims: []devenv.PodClaim{channel}}, 0, false)
	}
	if d := e.oneDomain(e.bound(30*time.Second, "low-0", "low-1"), domainKey); d != "c2" {
		t.Fatalf("low gang in %s, want c2", d)
	}
	return e, c2, channel
}
