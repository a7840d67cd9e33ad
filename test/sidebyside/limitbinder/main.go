// Command limitbinder is the side-by-side benchmark's "limit" scheduler: no filtering and no
// scoring. It lists the nodes and the pending pods of a namespace (schedulerName
// ome-scheduler, no nodeName), computes a node for every pod before binding anything
// (test/sidebyside/limitplan: gangs in one clique, no node over its nvidia.com/gpu), then
// binds every pod with the same v1.Binding kube-scheduler's DefaultBinder sends, through one
// client-go client with the given QPS and burst. Its pods/s is what the API server and that
// rate limit allow; the benchmark reports the real schedulers as a share of it.
//
// It serves /healthz, /metrics (Go runtime and client-go's rest_client_* metrics) and
// /debug/pprof/ on plain HTTP at 127.0.0.1:--port, and stays up after the last bind until
// SIGTERM so that its peak RSS and CPU time can be read. It exits non-zero, without waiting,
// when the listing or any bind fails; nothing is retried.
//
// Developer tooling only; nothing under pkg/ or cmd/ imports it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // rest_client_requests_total and friends
	"k8s.io/klog/v2"

	"github.com/moirai-internal/ome-scheduler/test/sidebyside/limitplan"
)

const (
	schedulerName = "ome-scheduler"
	gpu           = v1.ResourceName("nvidia.com/gpu")
	cliqueKey     = "nvidia.com/gpu.clique"
	gangLabel     = "sidebyside.ome.io/gang"
	podGroupLabel = "scheduling.x-k8s.io/pod-group"
	// binders bounds the binds in flight. kube-scheduler starts one goroutine per binding
	// cycle; here every bind is ready at once and all of them wait on the same client rate
	// limiter, so one goroutine per pod would only add goroutines (and memory) without more
	// throughput: 512 in flight outrun any QPS this benchmark uses at API latencies of a few
	// milliseconds, and the binder's own footprint stays the floor it is meant to be.
	binders = 512
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	qps := flag.Float64("qps", 1000, "client QPS")
	burst := flag.Int("burst", 2000, "client burst")
	namespace := flag.String("namespace", "sbs", "namespace of the pending pods")
	port := flag.Int("port", 0, "plain-HTTP port on 127.0.0.1 for /healthz, /metrics and /debug/pprof/")
	flag.Parse()
	logger := klog.Background()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *kubeconfig, *qps, *burst, *namespace, *port); err != nil {
		logger.Error(err, "limitbinder failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, kubeconfig string, qps float64, burst int, namespace string, port int) error {
	logger := klog.FromContext(ctx)
	if err := serve(ctx, port); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes, pods, uids, err := list(ctx, client, namespace)
	if err != nil {
		return err
	}
	began := time.Now()
	placed, unplaced := limitplan.Place(nodes, pods)
	if len(unplaced) > 0 {
		return fmt.Errorf("%d of %d pods found no node with room, first %s", len(unplaced), len(pods), unplaced[0])
	}
	logger.Info("Placement computed", "nodes", len(nodes), "pods", len(pods), "took", time.Since(began))
	began = time.Now()
	failed := bindAll(ctx, client, namespace, pods, uids, placed)
	logger.Info("Binds done", "pods", len(pods), "failed", failed, "took", time.Since(began))
	if failed > 0 {
		return fmt.Errorf("%d of %d binds failed", failed, len(pods))
	}
	<-ctx.Done() // stay up for the harness's measurements until SIGTERM
	return nil
}

// list returns the nodes and the pending pods of namespace meant for ome-scheduler, and the
// pods' UIDs.
func list(ctx context.Context, client kubernetes.Interface, namespace string) ([]limitplan.Node, []limitplan.Pod, map[string]types.UID, error) {
	nl, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	pl, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "").String()})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list pods: %w", err)
	}
	nodes := make([]limitplan.Node, 0, len(nl.Items))
	for _, n := range nl.Items {
		q := n.Status.Allocatable[gpu]
		nodes = append(nodes, limitplan.Node{Name: n.Name, Clique: n.Labels[cliqueKey], GPUs: q.Value()})
	}
	pods := make([]limitplan.Pod, 0, len(pl.Items))
	uids := make(map[string]types.UID, len(pl.Items))
	for _, p := range pl.Items {
		if p.Spec.SchedulerName != schedulerName || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		gang := p.Labels[gangLabel]
		if gang == "" {
			gang = p.Labels[podGroupLabel]
		}
		pods = append(pods, limitplan.Pod{Name: p.Name, Gang: gang, GPUs: podGPUs(&p)})
		uids[p.Name] = p.UID
	}
	return nodes, pods, uids, nil
}

// podGPUs is the pod's nvidia.com/gpu request: the sum over its containers (init containers
// are not used by the benchmark's pods).
func podGPUs(p *v1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		q := c.Resources.Requests[gpu]
		n += q.Value()
	}
	return n
}

// bindAll binds every pod to its node on at most `binders` goroutines and returns how many
// binds failed; each failure is logged.
func bindAll(ctx context.Context, client kubernetes.Interface, namespace string, pods []limitplan.Pod,
	uids map[string]types.UID, placed map[string]string) int {
	logger := klog.FromContext(ctx)
	var failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, binders)
	for _, p := range pods {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			b := &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: p.Name, UID: uids[p.Name]},
				Target:     v1.ObjectReference{Kind: "Node", Name: placed[p.Name]},
			}
			if err := client.CoreV1().Pods(namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
				logger.Error(err, "Bind failed", "pod", klog.KRef(namespace, p.Name), "node", placed[p.Name])
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(failed.Load())
}

// serve starts the plain-HTTP endpoints on 127.0.0.1:port.
func serve(ctx context.Context, port int) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server failed")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
