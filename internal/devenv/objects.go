package devenv

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Well-known names used by tests and the demo.
const (
	SchedulerName = "ome-scheduler"
	GPU           = v1.ResourceName("nvidia.com/gpu")
	PodGroupLabel = "scheduling.x-k8s.io/pod-group"
	TopologyAnno  = "ome.io/topology-key"
	CliqueKey     = "nvidia.com/gpu.clique"
	ZoneKey       = "topology.kubernetes.io/zone"
)

// NodeSpec describes a fake node: created through the API with the given allocatable set
// through the status subresource, and made Ready there too, or by kwok with Kwok.
type NodeSpec struct {
	Name          string
	Labels        map[string]string
	GPUs          int64
	ExtraResource map[v1.ResourceName]string
	CPU           string // default "64"
	Memory        string // default "256Gi"
	Pods          int64  // default 110
	Unschedulable bool
	Taints        []v1.Taint
	// Kwok annotates the node for kwok (KwokNodeAnnotation) and leaves its Ready condition to
	// kwok's node-initialize stage (WaitNodesReady waits for it).
	Kwok bool
}

// CreateNode creates a node, Ready at once unless s.Kwok (then kwok makes it Ready).
func CreateNode(ctx context.Context, c kubernetes.Interface, s NodeSpec) (*v1.Node, error) {
	labels := map[string]string{v1.LabelHostname: s.Name}
	for k, v := range s.Labels {
		labels[k] = v
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
		Spec:       v1.NodeSpec{Unschedulable: s.Unschedulable, Taints: s.Taints},
	}
	rl := s.resources()
	if s.Kwok {
		// The status goes in with the create (the API server keeps a new node's status): kwok
		// initializes the node as soon as it sees it, keeping this allocatable, and a later
		// status update would race with it.
		node.Annotations = map[string]string{KwokNodeAnnotation: KwokNodeValue}
		node.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl}
		created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create node %s: %w", s.Name, err)
		}
		return created, nil
	}
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", s.Name, err)
	}
	created.Status = v1.NodeStatus{
		Capacity:    rl,
		Allocatable: rl,
		Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	updated, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("set status of node %s: %w", s.Name, err)
	}
	return updated, nil
}

// resources returns the node's capacity (= allocatable).
func (s NodeSpec) resources() v1.ResourceList {
	cpu, mem, pods := s.CPU, s.Memory, s.Pods
	if cpu == "" {
		cpu = "64"
	}
	if mem == "" {
		mem = "256Gi"
	}
	if pods == 0 {
		pods = 110
	}
	rl := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(mem),
		v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	if s.GPUs > 0 {
		rl[GPU] = *resource.NewQuantity(s.GPUs, resource.DecimalSI)
	}
	for k, v := range s.ExtraResource {
		rl[k] = resource.MustParse(v)
	}
	return rl
}

// CreateNamespace creates a namespace (ignoring AlreadyExists).
func CreateNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// NewPodGroup returns a PodGroup with minMember, the topology-key annotation (when key is
// non-empty) and scheduleTimeoutSeconds (when timeout > 0).
func NewPodGroup(ns, name string, minMember int32, key string, timeout int32) *schedv1alpha1.PodGroup {
	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: minMember},
	}
	if key != "" {
		pg.Annotations[TopologyAnno] = key
	}
	if timeout > 0 {
		pg.Spec.ScheduleTimeoutSeconds = ptr.To(timeout)
	}
	return pg
}

// PodSpec describes a test pod.
type PodSpec struct {
	Namespace string
	Name      string
	Group     string // PodGroup name; empty = standalone
	GPUs      int64
	Labels    map[string]string
	// Apart adds a required pod anti-affinity on hostname against the gang's members.
	Apart         bool
	NodeSelector  map[string]string
	Tolerations   []v1.Toleration
	Spread        []v1.TopologySpreadConstraint
	Affinity      *v1.Affinity
	SchedulerName string // default ome-scheduler
	Gates         []string
	CPU           string
	// Claims are the pod's DRA resource claims, each used by its container.
	Claims []PodClaim
}

// NewPod builds a pod that requests GPUs (requests = limits) and runs on ome-scheduler.
func NewPod(s PodSpec) *v1.Pod {
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	if s.Group != "" {
		labels[PodGroupLabel] = s.Group
	}
	res := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if s.GPUs > 0 {
		q := *resource.NewQuantity(s.GPUs, resource.DecimalSI)
		res.Requests[GPU], res.Limits[GPU] = q, q
	}
	if s.CPU != "" {
		res.Requests[v1.ResourceCPU] = resource.MustParse(s.CPU)
	}
	name := s.SchedulerName
	if name == "" {
		name = SchedulerName
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: labels},
		Spec: v1.PodSpec{
			SchedulerName:             name,
			NodeSelector:              s.NodeSelector,
			Tolerations:               s.Tolerations,
			TopologySpreadConstraints: s.Spread,
			Affinity:                  s.Affinity,
			Containers:                []v1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10", Resources: res}},
		},
	}
	if s.Apart && s.Group != "" {
		if pod.Spec.Affinity == nil {
			pod.Spec.Affinity = &v1.Affinity{}
		}
		pod.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{PodGroupLabel: s.Group}},
				TopologyKey:   v1.LabelHostname,
			}},
		}
	}
	for _, c := range s.Claims {
		pc := v1.PodResourceClaim{Name: c.Name}
		if c.Template != "" {
			pc.ResourceClaimTemplateName = ptr.To(c.Template)
		} else {
			pc.ResourceClaimName = ptr.To(c.Claim)
		}
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, pc)
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: c.Name})
	}
	for _, g := range s.Gates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return pod
}

// CreatePod creates a pod.
func CreatePod(ctx context.Context, c kubernetes.Interface, s PodSpec) (*v1.Pod, error) {
	return c.CoreV1().Pods(s.Namespace).Create(ctx, NewPod(s), metav1.CreateOptions{})
}

// BindPod binds a pod to a node directly (as if another scheduler had placed it).
func BindPod(ctx context.Context, c kubernetes.Interface, ns, name, node string) error {
	return c.CoreV1().Pods(ns).Bind(ctx, &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

// WaitForBound waits until every named pod has a node and returns pod → node.
func WaitForBound(ctx context.Context, c kubernetes.Interface, ns string, timeout time.Duration, names ...string) (map[string]string, error) {
	out := map[string]string{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			if _, ok := out[n]; ok {
				continue
			}
			p, err := c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" {
				return false, nil
			}
			out[n] = p.Spec.NodeName
		}
		return true, nil
	})
	if err != nil {
		var missing []string
		for _, n := range names {
			if _, ok := out[n]; !ok {
				missing = append(missing, n)
			}
		}
		return out, fmt.Errorf("pods %s/%v not bound within %s", ns, missing, timeout)
	}
	return out, nil
}

// NodeOf returns the node a pod is bound to ("" if none).
func NodeOf(ctx context.Context, c kubernetes.Interface, ns, name string) string {
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

// FailedSchedulingMessages returns the messages of the pod's FailedScheduling events, oldest
// first, together with its PodScheduled condition message.
func FailedSchedulingMessages(ctx context.Context, c kubernetes.Interface, ns, pod string) []string {
	var out []string
	evs, err := c.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		sort.Slice(evs.Items, func(i, j int) bool {
			return evs.Items[i].CreationTimestamp.Before(&evs.Items[j].CreationTimestamp)
		})
		for _, e := range evs.Items {
			if e.Regarding.Name == pod && e.Reason == "FailedScheduling" {
				out = append(out, e.Note)
			}
		}
	}
	if p, err := c.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err == nil {
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
				out = append(out, cond.Message)
			}
		}
	}
	return out
}

// WaitForMessage waits until a FailedScheduling event or the PodScheduled condition of the
// pod contains substr, and returns that message.
func WaitForMessage(ctx context.Context, c kubernetes.Interface, ns, pod, substr string, timeout time.Duration) (string, error) {
	var found string
	var last []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = FailedSchedulingMessages(ctx, c, ns, pod)
		for _, m := range last {
			if strings.Contains(m, substr) {
				found = m
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s: no scheduling message containing %q within %s; got %q", ns, pod, substr, timeout, last)
	}
	return found, nil
}
