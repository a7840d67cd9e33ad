package omecli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	if c.DRA, err = readDRA(ctx, cs); err != nil {
		note = "DRA devices not counted: " + err.Error()
	}
	if r, err := o.reservations(ctx, cfg); err != nil {
		note = joinNotes(note, err.Error())
	} else {
		c.Reservations = r
		if !r.Leader {
			note = joinNotes(note, fmt.Sprintf("%s has run no scheduling cycle yet: a standby replica holds no reservations (ask the leader)", o.schedulerURL))
		}
		if r.Args != nil {
			c.Args = r.Args
		}
	}
	return c, note, nil
}

// schedulerConfig is the client configuration of --scheduler-url. The endpoint's serving
// certificate is verified against --scheduler-ca, else the kubeconfig's CA (the system roots
// when it names none), and the kubeconfig's credentials go with the request.
// --scheduler-insecure-skip-tls-verify skips the verification, and then no credentials are
// sent unless --scheduler-insecure-send-credentials asks for it: an unverified endpoint could
// be anyone's. Nor are they sent to a plain-HTTP URL without that flag.
func (o *options) schedulerConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.ServerName = "" // the API server's name, not the scheduler's
	c.TLSClientConfig.Insecure = o.schedulerInsecure
	switch {
	case o.schedulerCA != "":
		c.TLSClientConfig.CAData, c.TLSClientConfig.CAFile = nil, o.schedulerCA
	case o.schedulerInsecure:
		c.TLSClientConfig.CAData, c.TLSClientConfig.CAFile = nil, ""
		if !o.schedulerSendCredentials {
			c = rest.AnonymousClientConfig(c)
		}
	}
	if o.plainHTTP() && !o.schedulerSendCredentials {
		// Nothing verifies a plain-HTTP endpoint either, and the credentials would travel in
		// clear text.
		c = rest.AnonymousClientConfig(c)
	}
	return c
}

// plainHTTP reports whether --scheduler-url is a plain-HTTP endpoint.
func (o *options) plainHTTP() bool {
	return strings.HasPrefix(strings.ToLower(o.schedulerURL), "http://")
}

// reservations reads the scheduler's /configz entry at --scheduler-url, presenting the
// kubeconfig's identity (the same credentials kubectl uses) to a verified endpoint
// (schedulerConfig).
func (o *options) reservations(ctx context.Context, cfg *rest.Config) (*explain.Reservations, error) {
	if o.schedulerURL == "" {
		return nil, fmt.Errorf("reservations unknown: no --scheduler-url; run `kubectl -n %s port-forward deploy/ome-scheduler 10259` and pass --scheduler-url=https://127.0.0.1:10259", o.schedulerNamespace)
	}
	rt, err := rest.TransportFor(o.schedulerConfig(cfg))
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(o.schedulerURL, "/") + "/configz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	var unverified *tls.CertificateVerificationError
	if errors.As(err, &unverified) {
		return nil, fmt.Errorf("reservations unknown: %w; the scheduler's serving certificate (self-signed unless the chart's scheduler.metrics.tls.secretName is set) is verified against --scheduler-ca, else the kubeconfig's CA: pass --scheduler-ca FILE, or --scheduler-insecure-skip-tls-verify (which sends no credentials without --scheduler-insecure-send-credentials)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && (o.schedulerInsecure || o.plainHTTP()) && !o.schedulerSendCredentials {
		return nil, fmt.Errorf("reservations unknown: GET %s: %s; no credentials were sent to the unverified endpoint (--scheduler-insecure-skip-tls-verify): pass --scheduler-ca FILE, or add --scheduler-insecure-send-credentials (only for an endpoint you trust, such as a kubectl port-forward on 127.0.0.1)", url, resp.Status)
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
