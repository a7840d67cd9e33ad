package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The second act (-preempt): the chart rendered with preemption on.
var preemptValues = []string{"--set", "scheduler.disablePreemption=false"}

const (
	demoNS       = "gang-demo"
	lowGang      = "batch"
	highGang     = "serving"
	lowPriority  = int32(10)
	highPriority = int32(1000)
	actGangSize  = 4
)

func valuesSuffix(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return " " + strings.Join(values, " ")
}

// preemptAct fills clique-c (the only clique with four nodes) with a low-priority gang of
// four, then creates a high-priority gang of four, which fits in no clique (clique-a holds the
// demo gang, clique-b has three nodes): OMEGangPack evicts the whole low gang and the high gang
// lands in clique-c. It prints the Preempted events, the pods and the preemption metrics.
func preemptAct(ctx context.Context, cp *devenv.ControlPlane, kubectl func(...string) (string, error), port int, logPath string) error {
	step("Act 2: preemption (chart rendered with%s: OMEGangPack preemption: true, DefaultPreemption stays disabled)", valuesSuffix(preemptValues))
	fmt.Println("clique-a holds the demo gang (2 of 2 GPUs), clique-b has 3 free GPUs, clique-c 4.")
	fmt.Println("The demo's API server runs without the Priority admission plugin, so the pods carry")
	fmt.Println("spec.priority directly (on a cluster it is resolved from their priorityClassName).")

	step("A low-priority gang of %d (%s/%s, priority %d) fills clique-c", actGangSize, demoNS, lowGang, lowPriority)
	low, err := createPriorityGang(ctx, cp, lowGang, lowPriority)
	if err != nil {
		return err
	}
	lowNodes, err := waitPlaced(ctx, cp, demoNS, low, 60*time.Second)
	if err != nil {
		return fmt.Errorf("the low-priority gang: %w", err)
	}
	if c, err := oneClique(ctx, cp, lowNodes); err != nil || c != "clique-c" {
		return fmt.Errorf("the low-priority gang landed in %q (%v), want clique-c, the only clique with %d nodes", c, err, actGangSize)
	}
	if err := showPods(kubectl, "app="+lowGang); err != nil {
		return err
	}

	step("A high-priority gang of %d (%s/%s, priority %d): no clique has %d free GPUs", actGangSize, demoNS, highGang, highPriority, actGangSize)
	start := time.Now()
	high, err := createPriorityGang(ctx, cp, highGang, highPriority)
	if err != nil {
		return err
	}
	highNodes, err := waitPlaced(ctx, cp, demoNS, high, 90*time.Second)
	if err != nil {
		return fmt.Errorf("the high-priority gang: %w", err)
	}
	fmt.Printf("all %d members bound and Running %.1fs after they were created (the victims terminate first)\n", actGangSize, time.Since(start).Seconds())
	for _, p := range low {
		if err := devenv.WaitGone(ctx, cp.Client, demoNS, p, 30*time.Second); err != nil {
			return fmt.Errorf("victim %s: %w", p, err)
		}
	}

	step("Check the preemption")
	cmds := [][]string{
		{"get", "events", "-n", demoNS, "--field-selector", "reason=Preempted", "--sort-by=.metadata.name", "-o",
			"custom-columns=REASON:.reason,FROM:.reportingComponent,OBJECT:.involvedObject.name,MESSAGE:.message"},
		{"get", "pods", "-n", demoNS, "--sort-by=.metadata.name", "-o",
			"custom-columns=NAME:.metadata.name,PRIORITY:.spec.priority,STATUS:.status.phase,NODE:.spec.nodeName"},
	}
	if err := showKubectl(kubectl, cmds...); err != nil {
		return err
	}
	if m, err := pluginMetrics(ctx, cp, port); err == nil {
		var lines []string
		for _, l := range strings.Split(m, "\n") {
			if strings.Contains(l, "preemption") {
				lines = append(lines, l)
			}
		}
		fmt.Printf("$ curl https://127.0.0.1:%d/metrics | grep ome_scheduler_preemption (series above 0)\n%s\n\n", port, strings.Join(lines, "\n"))
	} else {
		fmt.Printf("metrics unavailable: %v\n", err)
	}
	if lines, err := devenv.GrepFile(logPath, `"gangpack.PostFilter.preempt"`); err == nil && len(lines) > 0 {
		fmt.Printf("ome-scheduler --v=4 decision log (gangpack.PostFilter.preempt):\n%s\n", strings.Join(lines, "\n"))
	}
	return preemptSummary(ctx, cp, low, highNodes)
}

// createPriorityGang creates PodGroup <name> (minMember actGangSize, topology key
// nvidia.com/gpu.clique) and its one-GPU members <name>-<i> at priority.
func createPriorityGang(ctx context.Context, cp *devenv.ControlPlane, name string, priority int32) ([]string, error) {
	pg := devenv.NewPodGroup(demoNS, name, actGangSize, devenv.CliqueKey, 300)
	if _, err := cp.PodGroups.SchedulingV1alpha1().PodGroups(demoNS).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create PodGroup %s/%s: %w", demoNS, name, err)
	}
	fmt.Printf("PodGroup %s/%s: minMember %d, annotation %s=%s\n", demoNS, name, actGangSize, devenv.TopologyAnno, devenv.CliqueKey)
	var pods []string
	for i := 0; i < actGangSize; i++ {
		p := devenv.NewPod(devenv.PodSpec{Namespace: demoNS, Name: fmt.Sprintf("%s-%d", name, i), Group: name, GPUs: 1,
			Labels: map[string]string{"app": name}})
		p.Spec.Priority = ptr.To(priority)
		if _, err := cp.Client.CoreV1().Pods(demoNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create pod %s/%s: %w", demoNS, p.Name, err)
		}
		pods = append(pods, p.Name)
	}
	fmt.Printf("pods %s: 1 nvidia.com/gpu each, schedulerName ome-scheduler, spec.priority %d\n", strings.Join(pods, ", "), priority)
	return pods, nil
}

// waitPlaced waits until every pod of namespace ns is bound and Running and returns pod → node.
func waitPlaced(ctx context.Context, cp *devenv.ControlPlane, ns string, pods []string, timeout time.Duration) (map[string]string, error) {
	nodes := map[string]string{}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range pods {
			p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning {
				return false, nil
			}
			nodes[n] = p.Spec.NodeName
		}
		return true, nil
	})
	if err != nil {
		var msgs []string
		for _, n := range pods {
			msgs = append(msgs, fmt.Sprintf("%s: %q", n, devenv.FailedSchedulingMessages(ctx, cp.Client, ns, n)))
		}
		return nodes, fmt.Errorf("not all of %v bound and Running within %s (bound %v); scheduling messages: %s", pods, timeout, nodes, strings.Join(msgs, "; "))
	}
	return nodes, nil
}

// oneClique returns the clique of the nodes, or an error when they span several.
func oneClique(ctx context.Context, cp *devenv.ControlPlane, podNodes map[string]string) (string, error) {
	cliques := map[string]bool{}
	for _, n := range podNodes {
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		cliques[node.Labels[devenv.CliqueKey]] = true
	}
	var names []string
	for c := range cliques {
		names = append(names, c)
	}
	sort.Strings(names)
	if len(names) != 1 {
		return strings.Join(names, ","), fmt.Errorf("gang split over %v", names)
	}
	return names[0], nil
}

func showPods(kubectl func(...string) (string, error), selector string) error {
	c := []string{"get", "pods", "-n", demoNS, "-l", selector, "--sort-by=.metadata.name", "-o",
		"custom-columns=NAME:.metadata.name,PRIORITY:.spec.priority,STATUS:.status.phase,NODE:.spec.nodeName"}
	fmt.Printf("$ kubectl %s\n", strings.Join(c, " "))
	out, err := kubectl(c...)
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}

// preemptSummary checks what the act shows: every low-priority member has exactly the
// Preempted event naming the high gang and clique-c and is gone, the high gang is whole in
// clique-c, and the demo gang was not touched.
func preemptSummary(ctx context.Context, cp *devenv.ControlPlane, low []string, highNodes map[string]string) error {
	step("Summary of act 2")
	clique, err := oneClique(ctx, cp, highNodes)
	if err != nil {
		return fmt.Errorf("the high-priority gang: %w", err)
	}
	want := fmt.Sprintf("Preempted by gang %s/%s to place it in domain %s", demoNS, highGang, clique)
	evs, err := cp.Client.EventsV1().Events(demoNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	got := map[string][]string{}
	for _, e := range evs.Items {
		if e.Reason == "Preempted" {
			got[e.Regarding.Name] = append(got[e.Regarding.Name], e.Note)
		}
	}
	if len(got) != len(low) {
		return fmt.Errorf("Preempted events on %v, want one on each of %v", got, low)
	}
	for _, p := range low {
		if len(got[p]) != 1 || got[p][0] != want {
			return fmt.Errorf("pod %s: Preempted events %q, want [%q]", p, got[p], want)
		}
		if _, err := cp.Client.CoreV1().Pods(demoNS).Get(ctx, p, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("victim %s still exists (%v)", p, err)
		}
	}
	demo, err := cp.Client.CoreV1().Pods(demoNS).List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
	if err != nil {
		return err
	}
	for _, p := range demo.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			return fmt.Errorf("demo gang pod %s was disturbed", p.Name)
		}
	}
	var placed []string
	for p, n := range highNodes {
		placed = append(placed, fmt.Sprintf("%s→%s(%s)", p, n, clique))
	}
	sort.Strings(placed)
	fmt.Printf("PREEMPTION PASSED: gang %s/%s (priority %d) placed whole in %s after the whole gang %s/%s (priority %d) was evicted there\n  %s\n",
		demoNS, highGang, highPriority, clique, demoNS, lowGang, lowPriority, strings.Join(placed, "\n  "))
	fmt.Printf("  %d Preempted events: %q. clique-b's 3 free GPUs could not hold the gang and the demo gang (priority 0) in clique-a was left alone: evicting it would not free 4 GPUs in one clique.\n", len(low), want)
	return nil
}
