package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The DRA act (-dra, or DEMO_DRA=1): the nodes' GPUs as a DRA driver publishes them
// (ResourceSlices of the class gpu.dra.example.com), and a gang of 4 whose members each take
// one through a ResourceClaimTemplate. By CPU every clique fits the gang and clique-a is the
// tightest; by devices (clique-a 4 per node, clique-b 2, clique-c 1) clique-c's 4 devices
// are the tightest fit, and that is where it lands.
const (
	draNS     = "dra-demo"
	draClass  = "gpu.dra.example.com"
	draGang   = "dra-gang"
	draSize   = 4
	draClique = "clique-c"
)

// draDevices is how many devices each clique's nodes publish.
var draDevices = map[string]int{"clique-a": 4, "clique-b": 2, "clique-c": 1}

func draAct(ctx context.Context, cp *devenv.ControlPlane, kubectl func(...string) (string, error), port int) error {
	step("Act: a gang whose GPUs come through DRA (ResourceSlices, a DeviceClass, ResourceClaimTemplates)")
	unwindsBefore := counter(ctx, cp, port, unwinds)
	if err := draPublish(ctx, cp); err != nil {
		return err
	}
	if err := devenv.CreateNamespace(ctx, cp.Client, draNS); err != nil {
		return err
	}
	tmpl := devenv.NewClaimTemplate(draNS, "one-gpu", devenv.ExactDevices("gpu", draClass, 1))
	if _, err := cp.Client.ResourceV1().ResourceClaimTemplates(draNS).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceClaimTemplate: %w", err)
	}
	if _, err := cp.PodGroups.SchedulingV1alpha1().PodGroups(draNS).Create(ctx, devenv.NewPodGroup(draNS, draGang, draSize, devenv.CliqueKey, 300), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PodGroup: %w", err)
	}
	var pods []string
	for i := 0; i < draSize; i++ {
		p := devenv.NewPod(devenv.PodSpec{Namespace: draNS, Name: fmt.Sprintf("%s-%d", draGang, i), Group: draGang, CPU: "100m",
			Claims: []devenv.PodClaim{{Name: "gpu", Template: "one-gpu"}}})
		if _, err := cp.Client.CoreV1().Pods(draNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
		pods = append(pods, p.Name)
	}
	fmt.Printf("ResourceClaimTemplate %s/one-gpu (1 device of class %s); PodGroup %s/%s minMember %d; pods %s (100m CPU each, no nvidia.com/gpu)\n",
		draNS, draClass, draNS, draGang, draSize, strings.Join(pods, ", "))
	start := time.Now()
	placed, err := waitPlaced(ctx, cp, draNS, pods, 120*time.Second)
	if err != nil {
		return fmt.Errorf("the DRA gang: %w", err)
	}
	fmt.Printf("all %d members bound and Running %.1fs after they were created\n", len(pods), time.Since(start).Seconds())
	step("Check the placement and the claims")
	cmds := [][]string{
		{"get", "pods", "-n", draNS, "--sort-by=.metadata.name", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,DOMAIN:.metadata.labels.ome\\.io/domain"},
		{"get", "resourceclaims", "-n", draNS, "-o", "custom-columns=CLAIM:.metadata.name,DEVICE:.status.allocation.devices.results[0].device,POOL:.status.allocation.devices.results[0].pool"},
	}
	if err := showKubectl(kubectl, cmds...); err != nil {
		return err
	}
	var where []string
	for _, n := range placed {
		where = append(where, n)
	}
	sort.Strings(where)
	if d := cliqueOf(where); d != draClique {
		return fmt.Errorf("the DRA gang landed on %v (clique %q), want %s: the tightest fit by devices", where, d, draClique)
	}
	fmt.Printf("The gang is whole in %s, the tightest fit by devices (4 free), though by CPU clique-a was the tightest.\n", draClique)
	after := counter(ctx, cp, port, unwinds)
	fmt.Printf("%s: %g before the act, %g after: no attempt was unwound\n", unwinds, unwindsBefore, after)
	if after != unwindsBefore {
		return fmt.Errorf("%s moved from %g to %g: the gang churned", unwinds, unwindsBefore, after)
	}
	return nil
}

const unwinds = "ome_scheduler_gang_unwind_total"

// counter reads one unlabelled series from the scheduler's /metrics (0 when absent or
// unreadable).
func counter(ctx context.Context, cp *devenv.ControlPlane, port int, name string) float64 {
	m, err := pluginMetrics(ctx, cp, port)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var f float64
			if _, err := fmt.Sscanf(v, "%g", &f); err == nil {
				return f
			}
		}
	}
	return 0
}

// draPublish creates the DeviceClass and, as a node-local DRA driver would, one ResourceSlice
// per node with its devices (draDevices per clique).
func draPublish(ctx context.Context, cp *devenv.ControlPlane) error {
	class := devenv.NewDeviceClass(draClass)
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create DeviceClass: %w", err)
	}
	var lines []string
	for _, c := range devenv.DemoLayout {
		for _, node := range c.Nodes {
			s := devenv.NewNodeSlice(draClass, node, "gpu", draDevices[c.Name], nil)
			if _, err := cp.Client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
			}
		}
		lines = append(lines, fmt.Sprintf("%s: %d device(s) per node", c.Name, draDevices[c.Name]))
	}
	fmt.Printf("DeviceClass %s; ResourceSlices as a node-local driver publishes them: %s\n", draClass, strings.Join(lines, ", "))
	return nil
}

// cliqueOf returns the demo clique of the nodes ("" when they span several).
func cliqueOf(nodes []string) string {
	of := map[string]string{}
	for _, c := range devenv.DemoLayout {
		for _, n := range c.Nodes {
			of[n] = c.Name
		}
	}
	d := ""
	for i, n := range nodes {
		if i > 0 && of[n] != d {
			return ""
		}
		d = of[n]
	}
	return d
}
