package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The partners act (-partners, or DEMO_PARTNERS=1): a prefill gang and a decode gang of 2
// members each, partners of one placement group (the chart's placementGroupLabel).
const (
	partnersNS    = "partners-demo"
	groupLabel    = "ome.io/placement-group"
	groupName     = "llama-pd"
	partnerSize   = 2
	groupClique   = "clique-c"
	partnersTotal = "ome_scheduler_placement_group_total"
)

var partnerGangs = []string{groupName + "-prefill", groupName + "-decode"}

// partnersAct runs after the demo gang filled clique-a: clique-b has 3 free GPUs, clique-c 4.
// Alone, each gang of 2 would best-fit clique-b (the least room that fits 2); as partners
// without a group topology key they must share one clique, and only clique-c holds all 4
// members. It prints where every member landed and the placement group counter, fails unless
// the group is whole in clique-c, and deletes what it created, so a later act starts from
// the same cluster.
func partnersAct(ctx context.Context, cp *devenv.ControlPlane, kubectl func(...string) (string, error), port int, logPath string) error {
	step("Act: a partner placement group (prefill + decode, placed together, all or nothing)")
	fmt.Println("clique-a holds the demo gang (2 of 2 GPUs), clique-b has 3 free GPUs, clique-c 4.")
	fmt.Println("Alone, each gang of 2 would best-fit clique-b: 3 free GPUs is the least room that fits 2.")
	if err := devenv.CreateNamespace(ctx, cp.Client, partnersNS); err != nil {
		return err
	}
	before, _ := groupCounter(ctx, cp, port)
	var pods []string
	for _, name := range partnerGangs {
		pg := devenv.NewPodGroup(partnersNS, name, partnerSize, devenv.CliqueKey, 300)
		pg.Labels = map[string]string{groupLabel: groupName}
		pg.Annotations[groupLabel+"-size"] = fmt.Sprint(len(partnerGangs))
		if _, err := cp.PodGroups.SchedulingV1alpha1().PodGroups(partnersNS).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodGroup %s/%s: %w", partnersNS, name, err)
		}
		fmt.Printf("PodGroup %s/%s: minMember %d, label %s=%s, annotations %s=%s, %s-size=%d (no %s-topology-key: both partners in one %s)\n",
			partnersNS, name, partnerSize, groupLabel, groupName, devenv.TopologyAnno, devenv.CliqueKey,
			groupLabel, len(partnerGangs), groupLabel, devenv.CliqueKey)
	}
	for _, name := range partnerGangs {
		for i := 0; i < partnerSize; i++ {
			p := devenv.NewPod(devenv.PodSpec{Namespace: partnersNS, Name: fmt.Sprintf("%s-%d", name, i), Group: name, GPUs: 1,
				Labels: map[string]string{"app": groupName, "ome.io/component": strings.TrimPrefix(name, groupName+"-")}})
			if _, err := cp.Client.CoreV1().Pods(partnersNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create pod %s/%s: %w", partnersNS, p.Name, err)
			}
			pods = append(pods, p.Name)
		}
	}
	fmt.Printf("pods %s: 1 nvidia.com/gpu each, schedulerName ome-scheduler\n", strings.Join(pods, ", "))
	start := time.Now()
	placed, err := waitPlaced(ctx, cp, partnersNS, pods, 90*time.Second)
	if err != nil {
		return fmt.Errorf("the placement group: %w", err)
	}
	fmt.Printf("all %d members of both partners bound and Running %.1fs after they were created\n", len(pods), time.Since(start).Seconds())

	step("Check the placement group")
	c := []string{"get", "pods", "-n", partnersNS, "--sort-by=.metadata.name", "-o",
		"custom-columns=NAME:.metadata.name,PODGROUP:.metadata.labels.scheduling\\.x-k8s\\.io/pod-group,STATUS:.status.phase,NODE:.spec.nodeName," +
			`DOMAIN:.metadata.annotations.ome\.io/domain,GROUP-DOMAIN:.metadata.annotations.ome\.io/placement-group-domain,` +
			`GROUP-KEY:.metadata.annotations.ome\.io/placement-group-domain-key,GROUP-LABEL:.metadata.labels.ome\.io/placement-group-domain`}
	if err := showKubectl(kubectl, c); err != nil {
		return err
	}
	after, err := groupCounter(ctx, cp, port)
	if err != nil {
		fmt.Printf("metrics unavailable: %v\n", err)
	} else {
		fmt.Printf("$ curl https://127.0.0.1:%d/metrics | grep %s\n%s\n\n", port, partnersTotal, strings.Join(after.lines, "\n"))
	}
	if lines, err := devenv.GrepFile(logPath, `"gangpack.group.pinned"`); err == nil && len(lines) > 0 {
		fmt.Printf("ome-scheduler --v=4 decision log (gangpack.group.pinned):\n%s\n", strings.Join(lines, "\n"))
	}
	if err := partnersSummary(ctx, cp, placed, before.placed, after.placed); err != nil {
		return err
	}
	return deletePartners(ctx, cp, pods)
}

// groupCount is the scheduler's placement group counter: every series, and result="placed".
type groupCount struct {
	lines  []string
	placed float64
}

func groupCounter(ctx context.Context, cp *devenv.ControlPlane, port int) (groupCount, error) {
	var g groupCount
	m, err := pluginMetrics(ctx, cp, port)
	if err != nil {
		return g, err
	}
	for _, l := range strings.Split(m, "\n") {
		if !strings.HasPrefix(l, partnersTotal+"{") {
			continue
		}
		g.lines = append(g.lines, l)
		if strings.Contains(l, `result="placed"`) {
			if _, err := fmt.Sscanf(l[strings.LastIndex(l, " ")+1:], "%g", &g.placed); err != nil {
				return g, fmt.Errorf("parse %q: %w", l, err)
			}
		}
	}
	return g, nil
}

// partnersSummary checks what the act shows: every member of both partners in clique-c, each
// on its own node, and one more placed group counted.
func partnersSummary(ctx context.Context, cp *devenv.ControlPlane, placed map[string]string, before, after float64) error {
	step("Summary of the partners act")
	var lines []string
	cliques := map[string]bool{}
	nodes := map[string]bool{}
	for pod, node := range placed {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := n.Labels[devenv.CliqueKey]
		cliques[c] = true
		nodes[node] = true
		lines = append(lines, fmt.Sprintf("%s→%s(%s)", pod, node, c))
	}
	sort.Strings(lines)
	if len(cliques) != 1 || !cliques[groupClique] || len(nodes) != len(placed) {
		return fmt.Errorf("placement group %s/%s not whole in %s on distinct nodes: %s", partnersNS, groupName, groupClique, strings.Join(lines, ", "))
	}
	if after != before+1 {
		return fmt.Errorf("%s{result=\"placed\"} went from %g to %g, want one more", partnersTotal, before, after)
	}
	fmt.Printf("PARTNERS PASSED: placement group %s/%s (PodGroups %s) placed whole in %s, one member per node\n  %s\n",
		partnersNS, groupName, strings.Join(partnerGangs, ", "), groupClique, strings.Join(lines, "\n  "))
	fmt.Printf("  %s{result=\"placed\"} %g → %g. Each gang alone would have taken clique-b; together they need %d GPUs in one clique, and only clique-c has them.\n",
		partnersTotal, before, after, len(placed))
	return nil
}

// deletePartners removes the act's pods and PodGroups and waits until the pods are gone.
func deletePartners(ctx context.Context, cp *devenv.ControlPlane, pods []string) error {
	for _, p := range pods {
		if err := cp.Client.CoreV1().Pods(partnersNS).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			return fmt.Errorf("delete pod %s/%s: %w", partnersNS, p, err)
		}
	}
	for _, name := range partnerGangs {
		if err := cp.PodGroups.SchedulingV1alpha1().PodGroups(partnersNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete PodGroup %s/%s: %w", partnersNS, name, err)
		}
	}
	for _, p := range pods {
		if err := devenv.WaitGone(ctx, cp.Client, partnersNS, p, 30*time.Second); err != nil {
			return fmt.Errorf("pod %s: %w", p, err)
		}
	}
	fmt.Printf("deleted the placement group's pods and PodGroups: clique-c is free again\n")
	return nil
}
