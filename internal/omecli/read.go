package omecli

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	if c.DRA, err = readDRA(ctx, cs); err != nil {
		note = "DRA devices not counted: " + err.Error()
	}
	if r, where, err := o.reservations(ctx, cfg); err != nil {
		note = joinNotes(note, err.Error())
	} else {
		c.Reservations = r
		if !r.Leader {
			note = joinNotes(note, fmt.Sprintf("%s has run no scheduling cycle yet: a standby replica holds no reservations (ask the leader)", where))
		}
		if r.Args != nil {
			c.Args = r.Args
		}
	}
	return c, note, nil
}

// podGroupClient is a client of the PodGroup API.
func (o *options) podGroupClient() (pgclientset.Interface, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return pgclientset.NewForConfig(cfg)
}

// readDRA lists the cluster's DRA objects (resource.k8s.io/v1); nil, nil when the API server
// does not serve them (no DRA: nothing to count).
func readDRA(ctx context.Context, cs kubernetes.Interface) (*explain.DRA, error) {
	r := cs.ResourceV1()
	slices, err := r.ResourceSlices().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list resourceslices: %w", err)
	}
	classes, err := r.DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deviceclasses: %w", err)
	}
	claims, err := r.ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list resourceclaims: %w", err)
	}
	templates, err := r.ResourceClaimTemplates(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list resourceclaimtemplates: %w", err)
	}
	d := &explain.DRA{}
	for i := range slices.Items {
		d.Slices = append(d.Slices, &slices.Items[i])
	}
	for i := range classes.Items {
		d.Classes = append(d.Classes, &classes.Items[i])
	}
	for i := range claims.Items {
		d.Claims = append(d.Claims, &claims.Items[i])
	}
	for i := range templates.Items {
		d.Templates = append(d.Templates, &templates.Items[i])
	}
	return d, nil
}

// joinNotes joins two notes with "; " (either may be empty).
func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
