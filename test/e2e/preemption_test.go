package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// TestPreemptionOnChartConfiguration runs bin/ome-scheduler with the chart rendered with
// scheduler.disablePreemption=false (its config.yaml, ServiceAccount and RBAC, on a control
// plane of its own so the shared chart scheduler, which has preemption off, is not involved).
// The rendered configuration keeps DefaultPreemption disabled and gives OMEGangPack
// `preemption: true`. The only clique (two one-GPU nodes) is full with a low-priority gang of
// two placed by the scheduler itself; a high-priority gang of two then evicts that whole gang
// (each victim gets the exact Preempted event naming the preemptor and the clique), binds on
// the clique's two nodes, and /metrics, scraped from the binary as the metrics reader, counts
// exactly one gang preemption of one victim gang.
func TestPreemptionOnChartConfiguration(t *testing.T) {
	values := append(readerValues(), "--set", "scheduler.disablePreemption=false")
	objs := splitObjects(t, helmTemplate(t, values...))
	var config []byte
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == releaseName+"-config" {
			s, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
			config = []byte(s)
		}
	}
	if len(config) == 0 {
		t.Fatalf("the chart rendered no ConfigMap %s-config with config.yaml", releaseName)
	}
	checkPreemptionConfig(t, config)

	c2, err := devenv.Start(devenv.Options{})
	if err != nil {
		t.Fatalf("control plane for the preemption test: %v", err)
	}
	t.Cleanup(c2.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dc, err := dynamic.NewForConfig(c2.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{releaseNS, readerSA.Namespace} {
		if err := devenv.CreateNamespace(ctx, c2.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c2.Client.CoreV1().ServiceAccounts(readerSA.Namespace).Create(ctx,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: readerSA.Name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		ri, err := resourceFor(dc, o)
		if err != nil {
			t.Fatalf("%s: %v", objectKey(o), err)
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "ome-e2e", Force: true}); err != nil {
			t.Fatalf("apply %s: %v", objectKey(o), err)
		}
	}

	// The scheduler runs as the chart's ServiceAccount with the rendered config.yaml.
	dir := filepath.Join(c2.Dir, "preempt-scheduler")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeTokenKubeconfigOn(t, c2, kubeconfig, serviceAccountTokenOn(t, ctx, c2, releaseNS, releaseName))
	full, err := devenv.WithKubeconfig(config, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, full, 0o600); err != nil {
		t.Fatal(err)
	}
	proc, port, err := devenv.StartSchedulerProcess(ctx, dir, "ome-scheduler", cfgPath, kubeconfig, "--v=2")
	if err != nil {
		t.Fatalf("start bin/ome-scheduler with the disablePreemption=false configuration: %v", err)
	}
	t.Cleanup(func() { proc.Stop(10 * time.Second) })
	dumpLogOnFailure(t, proc)

	// The only clique: two one-GPU nodes.
	const ns, clique = "preempt-e2e", "clique-p"
	nodes := []string{"p-node-1", "p-node-2"}
	if err := devenv.CreateLayout(ctx, c2.Client, []devenv.Clique{{Name: clique, Zone: "zone-a", Nodes: nodes}}); err != nil {
		t.Fatal(err)
	}
	if err := devenv.CreateNamespace(ctx, c2.Client, ns); err != nil {
		t.Fatal(err)
	}
	gangOf := func(group string, priority int32) []string {
		t.Helper()
		if _, err := c2.PodGroups.SchedulingV1alpha1().PodGroups(ns).Create(ctx,
			devenv.NewPodGroup(ns, group, 2, devenv.CliqueKey, 120), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create PodGroup %s: %v", group, err)
		}
		var names []string
		for i := 0; i < 2; i++ {
			p := devenv.NewPod(devenv.PodSpec{Namespace: ns, Name: fmt.Sprintf("%s-%d", group, i), Group: group, GPUs: 1})
			// No Priority admission plugin on the test API server: spec.priority is set as
			// the plugin would resolve it from a PriorityClass.
			p.Spec.Priority = ptr.To(priority)
			if _, err := c2.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create pod %s: %v", p.Name, err)
			}
			names = append(names, p.Name)
		}
		return names
	}

	// The low-priority gang fills the clique.
	low := gangOf("low", 10)
	if got, err := devenv.WaitForBound(ctx, c2.Client, ns, 30*time.Second, low...); err != nil {
		t.Fatalf("low gang: %v (bound %v)", err, got)
	}
	waitRunning(t, ctx, c2, ns, low...)

	// The high-priority gang has no room anywhere: it preempts the low gang.
	high := gangOf("high", 1000)
	bound, err := devenv.WaitForBound(ctx, c2.Client, ns, 60*time.Second, high...)
	if err != nil {
		var msgs []string
		for _, p := range high {
			msgs = append(msgs, fmt.Sprintf("%s: %q", p, devenv.FailedSchedulingMessages(ctx, c2.Client, ns, p)))
		}
		t.Fatalf("high gang: %v (bound %v); scheduling messages: %s", err, bound, strings.Join(msgs, "; "))
	}
	var gotNodes []string
	for _, p := range high {
		gotNodes = append(gotNodes, bound[p])
	}
	sort.Strings(gotNodes)
	if strings.Join(gotNodes, ",") != strings.Join(nodes, ",") {
		t.Errorf("high gang bound on %v, want the two nodes of %s %v", bound, clique, nodes)
	}
	for _, p := range low {
		if err := devenv.WaitGone(ctx, c2.Client, ns, p, 20*time.Second); err != nil {
			t.Errorf("victim %s: %v", p, err)
		}
	}

	// Each victim has exactly one Preempted event, with the exact text, and nothing else has one.
	want := fmt.Sprintf("Preempted by gang %s/high to place it in domain %s", ns, clique)
	evs, err := c2.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, e := range evs.Items {
		if e.Reason == "Preempted" {
			got[e.Regarding.Name] = append(got[e.Regarding.Name], e.Note)
		}
	}
	if len(got) != len(low) {
		t.Errorf("Preempted events on %v, want on %v only", got, low)
	}
	for _, p := range low {
		if len(got[p]) != 1 || got[p][0] != want {
			t.Errorf("pod %s: Preempted events %q, want exactly [%q]", p, got[p], want)
		}
	}

	// The binary's /metrics, as the chart's metrics reader.
	token := serviceAccountTokenOn(t, ctx, c2, readerSA.Namespace, readerSA.Name)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificate of a local process
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics as %s/%s: %d (%.300s)", readerSA.Namespace, readerSA.Name, resp.StatusCode, body)
	}
	fams := parseMetrics(t, body)
	t.Logf("high gang bound on %v; Preempted events %q", bound, got)
	if v := seriesValue(fams["ome_scheduler_preemption_total"], map[string]string{"preemptor": "gang", "result": "preempted"}); v != 1 {
		t.Errorf(`ome_scheduler_preemption_total{preemptor="gang",result="preempted"} = %v, want 1`, v)
	}
	if v := seriesValue(fams["ome_scheduler_preemption_victims_total"], map[string]string{"unit": "gang"}); v != 1 {
		t.Errorf(`ome_scheduler_preemption_victims_total{unit="gang"} = %v, want 1`, v)
	}
	if v := seriesValue(fams["ome_scheduler_preemption_victims_total"], map[string]string{"unit": "pod"}); v != 0 {
		t.Errorf(`ome_scheduler_preemption_victims_total{unit="pod"} = %v, want 0 (the victims were one gang)`, v)
	}
}

// checkPreemptionConfig asserts the configuration rendered with disablePreemption=false:
// DefaultPreemption disabled in multiPoint and enabled nowhere, OMEGangPack's args with
// preemption: true.
func checkPreemptionConfig(t *testing.T, config []byte) {
	t.Helper()
	var cfg struct {
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			Plugins       map[string]struct {
				Enabled  []struct{ Name string } `json:"enabled"`
				Disabled []struct{ Name string } `json:"disabled"`
			} `json:"plugins"`
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		t.Fatalf("parse rendered config.yaml: %v", err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != releaseName {
		t.Fatalf("want one profile %s, got %+v", releaseName, cfg.Profiles)
	}
	p := cfg.Profiles[0]
	disabled := false
	for point, set := range p.Plugins {
		for _, e := range set.Enabled {
			if e.Name == "DefaultPreemption" {
				t.Errorf("DefaultPreemption enabled at %s:\n%s", point, config)
			}
		}
		for _, d := range set.Disabled {
			if point == "multiPoint" && (d.Name == "DefaultPreemption" || d.Name == "*") {
				disabled = true
			}
		}
	}
	if !disabled {
		t.Errorf("DefaultPreemption not disabled in multiPoint:\n%s", config)
	}
	found := false
	for _, pc := range p.PluginConfig {
		if pc.Name == "OMEGangPack" {
			found = true
			if pc.Args["preemption"] != true {
				t.Errorf("OMEGangPack args preemption = %v, want true:\n%s", pc.Args["preemption"], config)
			}
		}
	}
	if !found {
		t.Errorf("no pluginConfig for OMEGangPack:\n%s", config)
	}
}

// waitRunning waits until the fake kubelet reports each pod Running.
func waitRunning(t *testing.T, ctx context.Context, c *devenv.ControlPlane, ns string, pods ...string) {
	t.Helper()
	for _, name := range pods {
		if !waitFor(ctx, 20*time.Second, func(ctx context.Context) bool {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == v1.PodRunning
		}) {
			t.Fatalf("pod %s/%s not Running within 20s", ns, name)
		}
	}
}

// seriesValue returns the value of the family's counter series carrying these labels (-1
// when the family or the series is absent).
func seriesValue(mf *dto.MetricFamily, labels map[string]string) float64 {
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		match := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(labels) {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
