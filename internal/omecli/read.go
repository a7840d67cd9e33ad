package omecli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// DefaultTopologyKey is the key whatif and domains use when neither --topology-key nor the
// scheduler's topologyKey argument names one.
const DefaultTopologyKey = "nvidia.com/gpu.clique"

// chartArgs are the chart's default plugin arguments: explain plans with them when the
// scheduler's own arguments cannot be read.
func chartArgs() *explain.Args {
	return &explain.Args{PodGroupTopologyKeyAnnotation: "ome.io/topology-key", PlacementGroupLabel: "ome.io/placement-group",
		DefaultPermitTimeoutSeconds: ptr.To[int64](600), GCIntervalSeconds: ptr.To[int64](60), GangSoftSpread: ptr.To(true)}
}

// readCluster lists every node and pod, and the scheduler's reservations when its endpoint
// answers (the note says why not when it does not).
func (o *options) readCluster(ctx context.Context) (*explain.Cluster, string, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("list nodes: %w", err)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("list pods: %w", err)
	}
	c := &explain.Cluster{Args: chartArgs(), Now: time.Now()}
	for i := range nodes.Items {
		c.Nodes = append(c.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		c.Pods = append(c.Pods, &pods.Items[i])
	}
	note := ""
	if r, err := o.reservations(ctx, cfg); err != nil {
		note = err.Error()
	} else {
		c.Reservations = r
		if !r.Leader {
			note = fmt.Sprintf("%s has run no scheduling cycle yet: a standby replica holds no reservations (ask the leader)", o.schedulerURL)
		}
		if r.Args != nil {
			c.Args = r.Args
		}
	}
	return c, note, nil
}

// reservations reads the scheduler's /configz entry at --scheduler-url, presenting the
// kubeconfig's identity (the same credentials kubectl uses).
func (o *options) reservations(ctx context.Context, cfg *rest.Config) (*explain.Reservations, error) {
	if o.schedulerURL == "" {
		return nil, fmt.Errorf("reservations unknown: no --scheduler-url; run `kubectl -n %s port-forward deploy/ome-scheduler 10259` and pass --scheduler-url=https://127.0.0.1:10259", o.schedulerNamespace)
	}
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.CAData, c.TLSClientConfig.CAFile = nil, o.schedulerCA
	c.TLSClientConfig.Insecure = o.schedulerCA == ""
	c.TLSClientConfig.ServerName = ""
	rt, err := rest.TransportFor(c)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(o.schedulerURL, "/") + "/configz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reservations unknown: GET %s: %s (%.200s); reading it needs `get` on the non-resource URL /configz (the chart's reader role)", url, resp.Status, strings.TrimSpace(string(body)))
	}
	r, err := explain.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	return r, nil
}

// podGroupClient is a client of the PodGroup API.
func (o *options) podGroupClient() (pgclientset.Interface, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return pgclientset.NewForConfig(cfg)
}
