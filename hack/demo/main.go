// Command demo is `make demo`: it starts a local control plane (etcd, kube-apiserver,
// kube-controller-manager; kwok from bin/ simulates the nodes' kubelets), installs the
// PodGroup CRD, creates kwok GPU nodes in nvidia.com/gpu.clique domains across two zones,
// runs bin/ome-scheduler with the Helm chart's
// default configuration, applies the demo gang of manifests/demo and shows where it landed.
// Optional acts follow: -partners (DEMO_PARTNERS=1, partners.go) a partner placement group,
// -dra (DEMO_DRA=1, dra.go) a gang whose GPUs come through DRA claims,
// then -preempt (DEMO_PREEMPT=1, preempt.go) preemption. It stops everything it started, also
// on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// preempt runs the second act: preemption (flag -preempt, or DEMO_PREEMPT=1 in the environment).
var preempt = flag.Bool("preempt", os.Getenv("DEMO_PREEMPT") == "1",
	"render the chart with scheduler.disablePreemption=false and show a high-priority gang displacing a low-priority one")

// partners runs the partners act (flag -partners, or DEMO_PARTNERS=1): a prefill and a decode
// gang of one placement group placed together in one clique.
var partners = flag.Bool("partners", os.Getenv("DEMO_PARTNERS") == "1",
	"show a partner placement group (prefill + decode gangs of 2) placed whole in one clique")

// dra runs the DRA act (flag -dra, or DEMO_DRA=1): a gang whose GPUs come through DRA claims
// lands in the tightest clique by devices.
var dra = flag.Bool("dra", os.Getenv("DEMO_DRA") == "1",
	"show a gang of 4 whose members take a GPU each through a ResourceClaimTemplate placed in the tightest clique by devices")

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	interrupted := ctx.Err() != nil
	stop()
	if interrupted {
		fmt.Fprintln(os.Stderr, "\nDEMO INTERRUPTED: everything it started has been stopped.")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nDEMO FAILED: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, a ...any) { fmt.Printf("\n==> "+format+"\n", a...) }

func run(ctx context.Context) (err error) {
	root, err := devenv.RepoRoot()
	if err != nil {
		return err
	}
	step("Starting a local control plane (etcd + kube-apiserver from bin/) and kwok for the nodes")
	cp, err := devenv.Start(devenv.Options{Kwok: true})
	if err != nil {
		return err
	}
	var procs []*devenv.Process
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(10 * time.Second)
		}
		logs := cp.Dir
		if err != nil {
			// keep the logs of a failed run
			keep, _ := os.MkdirTemp("", "ome-demo-logs-")
			for _, p := range append(procs, cp.Kwok) {
				_ = copyFile(p.LogPath, filepath.Join(keep, filepath.Base(p.LogPath)))
			}
			logs = keep
			fmt.Fprintf(os.Stderr, "component logs kept in %s\n", logs)
		}
		cp.Stop()
		fmt.Println("\nStopped the scheduler, kube-controller-manager, kwok, kube-apiserver and etcd.")
	}()
	fmt.Printf("API server %s; PodGroup CRD podgroups.scheduling.x-k8s.io installed from %s\n", cp.Config.Host, "manifests/crds")
	fmt.Printf("kwok (bin/kwok, pid %d) manages the nodes annotated %s=%s: it makes them Ready, keeps their Leases,\n"+
		"runs bound pods (Running, Ready, pod IP) and finishes graceful deletions (at most %s Terminating)\n",
		cp.Kwok.Cmd.Process.Pid, devenv.KwokNodeAnnotation, devenv.KwokNodeValue, devenv.DefaultMaxGrace)

	kcm, err := devenv.StartProcess(cp.Dir, "kube-controller-manager", "kube-controller-manager",
		"--kubeconfig="+cp.KubeConfigPath, "--controllers=deployment,replicaset,namespace,garbagecollector,resourceclaim-controller",
		"--leader-elect=false", "--secure-port=0", "--v=1")
	if err != nil {
		return err
	}
	procs = append(procs, kcm)
	kubectl := func(args ...string) (string, error) { return runKubectl(ctx, cp.KubeConfigPath, args...) }

	step("Creating kwok GPU nodes (1 nvidia.com/gpu each; kwok's node-initialize stage makes them Ready)")
	began := time.Now()
	if err := cp.CreateLayout(ctx, devenv.DemoLayout); err != nil {
		return err
	}
	fmt.Printf("%d nodes Ready %.1fs after they were created\n", len(devenv.LayoutNodes(devenv.DemoLayout)), time.Since(began).Seconds())
	out, err := kubectl("get", "nodes", "-L", devenv.CliqueKey, "-L", devenv.ZoneKey)
	if err != nil {
		return err
	}
	fmt.Print(out)

	var values []string
	if *preempt {
		values = preemptValues
	}
	step("Rendering the Helm chart's scheduler configuration (helm template ...%s --show-only templates/configmap.yaml)", valuesSuffix(values))
	config, err := chartConfig(ctx, values...)
	if err != nil {
		return err
	}
	fmt.Print(indent(string(config)))
	if err := devenv.CreateNamespace(ctx, cp.Client, "ome"); err != nil {
		return err
	}
	full, err := devenv.WithKubeconfig(config, cp.KubeConfigPath)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(cp.Dir, "config.yaml")
	if err := os.WriteFile(cfgPath, full, 0o600); err != nil {
		return err
	}

	step("Starting bin/ome-scheduler --config=<chart config.yaml> (+ clientConnection.kubeconfig)")
	sched, port, err := devenv.StartSchedulerProcess(ctx, cp.Dir, "ome-scheduler", cfgPath, cp.KubeConfigPath, "--v=4")
	if err != nil {
		return err
	}
	procs = append(procs, sched)
	holder, err := waitLease(ctx, cp)
	if err != nil {
		return err
	}
	fmt.Printf("ome-scheduler is serving https://127.0.0.1:%d and holds Lease ome/ome-scheduler (%s)\n", port, holder)

	step("Run the demo gang")
	for _, f := range []string{"namespace.yaml", "podgroup.yaml", "gang.yaml"} {
		fmt.Printf("$ kubectl apply -f manifests/demo/%s\n", f)
		out, err := kubectl("apply", "-f", filepath.Join(root, "manifests", "demo", f))
		if err != nil {
			return err
		}
		fmt.Print(out)
	}

	pods, err := waitGang(ctx, cp)
	if err != nil {
		return err
	}

	step("Check the placement")
	cmds := [][]string{
		{"get", "pods", "-n", "gang-demo", "-l", "app=gang-demo", "-o", "custom-columns=NAME:.metadata.name,STATUS:.status.phase,IP:.status.podIP,NODE:.spec.nodeName," +
			`DOMAIN:.metadata.annotations.ome\.io/domain,DOMAIN-KEY:.metadata.annotations.ome\.io/domain-key,DOMAIN-LABEL:.metadata.labels.ome\.io/domain`},
		{"get", "nodes", "-L", devenv.CliqueKey},
		{"get", "events", "-n", "gang-demo", "--field-selector", "reason=Scheduled", "-o",
			"custom-columns=REASON:.reason,FROM:.reportingComponent,OBJECT:.involvedObject.name,MESSAGE:.message"},
	}
	if err := showKubectl(kubectl, cmds...); err != nil {
		return err
	}
	if err := showKubectlOme(ctx, cp.KubeConfigPath, port); err != nil {
		return err
	}
	if m, err := pluginMetrics(ctx, cp, port); err == nil {
		fmt.Printf("$ curl https://127.0.0.1:%d/metrics | grep ome_scheduler_ (as the admin user; series above 0)\n%s\n\n", port, m)
	} else {
		fmt.Printf("metrics unavailable: %v\n", err)
	}
	if lines, err := devenv.GrepFile(sched.LogPath, "gangpack.pinGang.result"); err == nil && len(lines) > 0 {
		fmt.Printf("ome-scheduler --v=4 decision log (gangpack.pinGang.result):\n%s\n", strings.Join(lines, "\n"))
	}
	if err := summary(ctx, cp, pods); err != nil {
		return err
	}
	if *partners {
		if err := partnersAct(ctx, cp, kubectl, port, sched.LogPath); err != nil {
			return err
		}
	}
	if *dra {
		if err := draAct(ctx, cp, kubectl, port); err != nil {
			return err
		}
	}
	if !*preempt {
		return nil
	}
	return preemptAct(ctx, cp, kubectl, port, sched.LogPath)
}

// chartConfig renders the chart's ConfigMap with helm (and the extra helm arguments) and
// returns its config.yaml.
func chartConfig(ctx context.Context, values ...string) ([]byte, error) {
	out, err := devenv.HelmTemplate(ctx, devenv.HelmRender{
		Args: append([]string{"--show-only", "templates/configmap.yaml"}, values...),
	})
	if err != nil {
		return nil, err
	}
	cm := v1.ConfigMap{}
	if err := yaml.Unmarshal(out, &cm); err != nil {
		return nil, fmt.Errorf("parse rendered ConfigMap: %w", err)
	}
	cfg, ok := cm.Data["config.yaml"]
	if !ok {
		return nil, errors.New("rendered ConfigMap has no config.yaml")
	}
	return []byte(cfg), nil
}

func runKubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	path, err := devenv.Bin("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), describeExit(err))
	}
	return string(out), nil
}

func describeExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

func waitLease(ctx context.Context, cp *devenv.ControlPlane) (string, error) {
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client.CoordinationV1().Leases("ome").Get(ctx, "ome-scheduler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("ome-scheduler did not take its Lease ome/ome-scheduler: %w", err)
	}
	return holder, nil
}

// waitGang waits for both demo pods to be bound and Running with a pod IP (kwok's pod-ready stage).
func waitGang(ctx context.Context, cp *devenv.ControlPlane) ([]v1.Pod, error) {
	var pods []v1.Pod
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.CoreV1().Pods("gang-demo").List(ctx, metav1.ListOptions{LabelSelector: "app=gang-demo"})
		if err != nil || len(list.Items) < 2 {
			return false, nil
		}
		for _, p := range list.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" {
				return false, nil
			}
		}
		pods = list.Items
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the demo gang was not placed within 90s: %w", err)
	}
	fmt.Printf("both members bound, and Running with a pod IP from kwok, %.1fs after the Deployment was applied\n", time.Since(start).Seconds())
	return pods, nil
}

func pluginMetrics(ctx context.Context, cp *devenv.ControlPlane, port int) (string, error) {
	client, err := devenv.MetricsClient(cp.Config)
	if err != nil {
		return "", err
	}
	req, _ := httpRequest(ctx, fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "ome_scheduler_") && !strings.HasSuffix(l, " 0") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

func summary(ctx context.Context, cp *devenv.ControlPlane, pods []v1.Pod) error {
	cliques := map[string]bool{}
	nodes := map[string]bool{}
	var placed []string
	for _, p := range pods {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := n.Labels[devenv.CliqueKey]
		cliques[c] = true
		nodes[n.Name] = true
		placed = append(placed, fmt.Sprintf("%s→%s(%s)", p.Name, n.Name, c))
	}
	sort.Strings(placed)
	step("Summary")
	if len(cliques) != 1 || len(nodes) != len(pods) {
		return fmt.Errorf("gang split or co-located: %s", strings.Join(placed, ", "))
	}
	var clique string
	for c := range cliques {
		clique = c
	}
	fmt.Printf("DEMO PASSED: gang gang-demo/gang-demo placed whole in %s on %d different nodes by ome-scheduler\n  %s\n",
		clique, len(nodes), strings.Join(placed, "\n  "))
	if clique == "clique-a" {
		fmt.Println("  clique-a is the best fit: member room 2 is the smallest room that fits 2 (clique-b has 3, clique-c 4).")
	}
	return nil
}
