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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// forwardTimeout bounds finding the leader and opening the port-forward to it.
const forwardTimeout = 30 * time.Second

// reservations reads the leading scheduler's reservations (the omeGangPack entry of its
// /configz) at --scheduler-url, else through a port-forward to the leader's pod that
// findLeader finds. where names the endpoint for the notes.
func (o *options) reservations(ctx context.Context, cfg *rest.Config) (r *explain.Reservations, where string, err error) {
	if o.schedulerURL != "" {
		r, err := o.getReservations(ctx, o.schedulerConfig(cfg), o.schedulerURL, o.schedulerURL)
		return r, o.schedulerURL, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return o.leaderReservations(ctx, cfg, cs)
}

// leaderReservations reads the reservations through a port-forward to the leader's pod.
func (o *options) leaderReservations(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface) (r *explain.Reservations, where string, err error) {
	fctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	l, err := findLeader(fctx, cs, o.schedulerNamespace, o.schedulerName)
	if err != nil {
		return nil, "", fmt.Errorf("reservations unknown: %w", err)
	}
	where = fmt.Sprintf("the leader's pod %s/%s", l.pod.Namespace, l.pod.Name)
	if l.selfSigned && o.schedulerCA == "" && !o.schedulerInsecure {
		return nil, where, fmt.Errorf("reservations unknown: %s serves the self-signed certificate the scheduler makes at startup (the chart's scheduler.metrics.tls.secretName is unset), which nothing can verify: pass --scheduler-insecure-skip-tls-verify (kubectl ome still talks to that pod only, through a port-forward over your verified API-server connection), or give the scheduler a certificate and pass --scheduler-ca FILE", where)
	}
	t, err := forward(fctx, cfg, l.pod, l.port)
	if err != nil {
		return nil, where, fmt.Errorf("reservations unknown: %w", err)
	}
	defer t.Close()
	r, err = o.getReservations(ctx, o.tunnelConfig(cfg), fmt.Sprintf("https://127.0.0.1:%d", t.local), where)
	if err != nil && t.errors() != "" {
		err = fmt.Errorf("%w (port-forward: %s)", err, t.errors())
	}
	return r, where, err
}

// schedulerConfig is the client configuration of --scheduler-url. The endpoint's serving
// certificate is verified against --scheduler-ca, else the kubeconfig's CA (the system roots
// when it names none), and the kubeconfig's credentials go with the request.
// --scheduler-insecure-skip-tls-verify skips the verification, and then no credentials are
// sent unless --scheduler-insecure-send-credentials asks for it: an unverified endpoint could
// be anyone's. Nor are they sent to a plain-HTTP URL without that flag.
func (o *options) schedulerConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.ServerName = o.schedulerServerName // not the API server's name
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

// tunnelConfig is the client configuration of the port-forward to the leader's pod. Its
// serving certificate is verified as for --scheduler-url, against the name
// --scheduler-tls-server-name, else the chart's Service name {name}-metrics.{namespace}.svc
// (the name the chart's ServiceMonitor checks). The kubeconfig's credentials go with the
// request also with --scheduler-insecure-skip-tls-verify: the tunnel runs over the verified
// API-server connection to the pod the Lease names, so no one else can answer.
func (o *options) tunnelConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Proxy = nil // the kubeconfig's proxy-url is the API server's, not 127.0.0.1's
	c.TLSClientConfig.ServerName = o.tunnelServerName()
	c.TLSClientConfig.Insecure = o.schedulerInsecure
	switch {
	case o.schedulerCA != "":
		c.TLSClientConfig.CAData, c.TLSClientConfig.CAFile = nil, o.schedulerCA
	case o.schedulerInsecure:
		c.TLSClientConfig.CAData, c.TLSClientConfig.CAFile = nil, ""
	}
	return c
}

// tunnelServerName is the name the certificate behind the port-forward must carry.
func (o *options) tunnelServerName() string {
	if o.schedulerServerName != "" {
		return o.schedulerServerName
	}
	return fmt.Sprintf("%s-metrics.%s.svc", o.schedulerName, o.schedulerNamespace)
}

// plainHTTP reports whether --scheduler-url is a plain-HTTP endpoint.
func (o *options) plainHTTP() bool {
	return strings.HasPrefix(strings.ToLower(o.schedulerURL), "http://")
}

// getReservations reads the /configz entry at base with the client configuration c (the
// kubeconfig's identity, the same credentials kubectl uses, unless c is anonymous); where
// names the endpoint in errors.
func (o *options) getReservations(ctx context.Context, c *rest.Config, base, where string) (*explain.Reservations, error) {
	rt, err := rest.TransportFor(c)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(base, "/") + "/configz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	var unverified *tls.CertificateVerificationError
	if errors.As(err, &unverified) {
		return nil, o.unverifiedError(err, where)
	}
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %s: %w", where, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && o.schedulerURL != "" && (o.schedulerInsecure || o.plainHTTP()) && !o.schedulerSendCredentials {
		return nil, fmt.Errorf("reservations unknown: GET %s: %s; no credentials were sent to the unverified endpoint (--scheduler-insecure-skip-tls-verify): pass --scheduler-ca FILE, or add --scheduler-insecure-send-credentials (only for an endpoint you trust, such as a kubectl port-forward on 127.0.0.1)", url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reservations unknown: GET /configz of %s: %s (%.200s); reading it needs `get` on the non-resource URL /configz (the chart's debug reader role)", where, resp.Status, strings.TrimSpace(string(body)))
	}
	r, err := explain.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("reservations unknown: %w", err)
	}
	return r, nil
}

// unverifiedError says what to pass when the scheduler's serving certificate does not verify.
func (o *options) unverifiedError(err error, where string) error {
	against := "the kubeconfig's CA"
	if o.schedulerCA != "" {
		against = "--scheduler-ca " + o.schedulerCA
	}
	if o.schedulerURL != "" {
		return fmt.Errorf("reservations unknown: %w; the scheduler's serving certificate (self-signed unless the chart's scheduler.metrics.tls.secretName is set) is verified against --scheduler-ca, else the kubeconfig's CA: pass --scheduler-ca FILE, or --scheduler-insecure-skip-tls-verify (which sends no credentials without --scheduler-insecure-send-credentials)", err)
	}
	return fmt.Errorf("reservations unknown: the serving certificate of %s does not verify against %s as %s: %w; pass --scheduler-ca FILE (the CA that issued the certificate of scheduler.metrics.tls.secretName) and, when the certificate does not name %s, --scheduler-tls-server-name NAME; or --scheduler-insecure-skip-tls-verify", where, against, o.tunnelServerName(), err, o.tunnelServerName())
}
