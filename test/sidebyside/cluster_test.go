package sidebyside

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const (
	namespace = "sbs"
	// gangLabel names a pod's gang for both schedulers (only the split check reads it).
	gangLabel = "sidebyside.ome.io/gang"
	workers   = 16
)

// runScenario runs one case on a fresh control plane: nodes and the whole backlog first, then
// the scheduler process, until every pod is bound.
func runScenario(t *testing.T, sc scenario) (result, error) {
	t.Helper()
	res := result{scenario: sc, pods: sc.pods()}
	cp, err := devenv.Start(devenv.Options{WithoutCRD: sc.sched != ome, Kwok: sc.kwok, WithoutKubelet: true})
	if err != nil {
		return res, err
	}
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), sc.timeout+5*time.Minute)
	defer cancel()

	began := time.Now()
	cliqueOf, err := createNodes(ctx, cp, sc)
	if err != nil {
		return res, err
	}
	nodesTook := time.Since(began)
	began = time.Now()
	if err := createBacklog(ctx, cp, sc); err != nil {
		return res, err
	}
	t.Logf("%s: %d nodes in %.1fs, %d pods (%d gangs of %d) in %.1fs", sc.name(), sc.nodes, nodesTook.Seconds(),
		res.pods, res.pods/sc.gang, sc.gang, time.Since(began).Seconds())
	var nominated map[string]string
	if sc.failover {
		if nominated, err = nominateForming(ctx, cp, sc, cliqueOf); err != nil {
			return res, fmt.Errorf("nominate the forming gangs: %w", err)
		}
		if err := departLease(ctx, cp); err != nil {
			return res, fmt.Errorf("create the departed leader's Lease: %w", err)
		}
	}

	w, err := watchBinds(ctx, cp.Client, res.pods)
	if err != nil {
		return res, err
	}
	defer w.stop()
	proc, err := startScheduler(ctx, cp, sc)
	if err != nil {
		return res, err
	}
	defer proc.stop()
	var synced <-chan time.Time
	if sc.failover {
		synced = proc.watchSync(ctx)
	}
	if err := w.wait(ctx, sc.timeout, proc.proc); err != nil {
		saveLog(t, proc, sc)
		return res, err
	}
	if sc.kwok {
		took, err := w.settle(ctx, 2*time.Minute)
		t.Logf("%s: every pod Running %.1fs after the last bind (err %v)", sc.name(), took.Seconds(), err)
	}
	if err := proc.measure(ctx, &res); err != nil {
		t.Logf("%s: %v", sc.name(), err)
	}
	w.fill(&res, proc.started, cliqueOf)
	if sc.failover {
		if err := failoverFill(ctx, cp, &res, synced, nominated, w, cliqueOf); err != nil {
			return res, err
		}
		t.Logf("%s: informers synced %.2fs after the start, Lease acquired %.1fs after it; first bind %.2fs and all bound %.1fs after the Lease; "+
			"%d of %d forming gangs bound whole in their nominated clique", sc.name(), res.fo.synced.Sub(res.startedAt).Seconds(),
			res.fo.acquired.Sub(res.startedAt).Seconds(), res.firstAt.Sub(res.fo.acquired).Seconds(), res.lastAt.Sub(res.fo.acquired).Seconds(),
			res.fo.formingKept, res.fo.forming)
	}
	proc.stop()
	saveLog(t, proc, sc)
	if sc.sched != stock && res.splits > 0 {
		t.Errorf("%s: %d of %d gangs split across cliques", sc.name(), res.splits, res.gangs)
	}
	return res, nil
}

// createNodes creates the nodes concurrently: node i in clique i/SBS_CLIQUE; with kwok it
// waits until kwok has made them all Ready. It returns each node's clique.
func createNodes(ctx context.Context, cp *devenv.ControlPlane, sc scenario) (map[string]string, error) {
	names := make([]string, sc.nodes)
	cliqueOf := make(map[string]string, sc.nodes)
	for i := range names {
		names[i] = nodeName(i)
		cliqueOf[names[i]] = fmt.Sprintf("clique-%04d", i/sc.clique)
	}
	err := parallel(ctx, sc.nodes, func(ctx context.Context, i int) error {
		_, err := devenv.CreateNode(ctx, cp.Client, devenv.NodeSpec{
			Name: names[i], GPUs: int64(sc.gpusPerNode), Labels: map[string]string{devenv.CliqueKey: cliqueOf[names[i]]},
			Kwok: sc.kwok,
		})
		return err
	})
	if err == nil && sc.kwok {
		err = devenv.WaitNodesReady(ctx, cp.Client, 5*time.Minute, names...)
	}
	return cliqueOf, err
}

// createBacklog creates the namespace, the PodGroups (ome only) and every pod: one GPU,
// 100m CPU and 128Mi each, with schedulerName ome-scheduler (the stock configuration's one
// profile has that name too). Only ome's pods carry the PodGroup label.
func createBacklog(ctx context.Context, cp *devenv.ControlPlane, sc scenario) error {
	if err := devenv.CreateNamespace(ctx, cp.Client, namespace); err != nil {
		return err
	}
	gangs := sc.pods() / sc.gang
	if sc.sched == ome {
		err := parallel(ctx, gangs, func(ctx context.Context, i int) error {
			pg := devenv.NewPodGroup(namespace, gangName(i), int32(sc.gang), "", 0)
			_, err := cp.PodGroups.SchedulingV1alpha1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("create PodGroups: %w", err)
		}
	}
	return parallel(ctx, gangs*sc.gang, func(ctx context.Context, i int) error {
		g := gangName(i / sc.gang)
		s := devenv.PodSpec{Namespace: namespace, Name: fmt.Sprintf("%s-%d", g, i%sc.gang), GPUs: 1, CPU: "100m",
			Labels: map[string]string{gangLabel: g}}
		if sc.sched == ome {
			s.Group = g
		}
		pod := devenv.NewPod(s)
		pod.Spec.Containers[0].Resources.Requests["memory"] = resource.MustParse("128Mi")
		_, err := cp.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

func gangName(i int) string { return fmt.Sprintf("gang-%05d", i) }

func nodeName(i int) string { return fmt.Sprintf("gpu-node-%05d", i) }

// parallel calls fn(0..n-1) on at most `workers` goroutines and returns the first error. It
// starts no further call once one has failed or ctx is done, and reports ctx's error then.
func parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// saveLog copies the scheduler's log to the output directory.
func saveLog(t *testing.T, p *schedProc, sc scenario) {
	t.Helper()
	b, err := os.ReadFile(p.proc.LogPath)
	if err == nil {
		err = os.WriteFile(filepath.Join(sc.out, "scheduler_"+sc.name()+".log"), b, 0o644)
	}
	if err != nil {
		t.Logf("%s: save scheduler log: %v", sc.name(), err)
	}
}
