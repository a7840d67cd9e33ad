package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// TestMetricsOverVerifiedTLS serves /metrics with a certificate from a Secret the way the chart
// mounts it (scheduler.metrics.tls.secretName) and scrapes it the way the chart's ServiceMonitor
// says with a CA (ca.secret) and serverName: the client verifies the serving certificate and
// presents the metrics reader's bearer token.
func TestMetricsOverVerifiedTLS(t *testing.T) {
	s := getChartScheduler(t) // the chart's RBAC, ServiceAccounts and configuration
	values := append(readerValues(),
		"--set", "scheduler.metrics.tls.secretName=ome-scheduler-metrics-tls",
		"--set", "scheduler.metrics.serviceMonitor.enabled=true",
		"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=ome-scheduler-metrics-ca",
		"--set", "scheduler.metrics.serviceMonitor.ca.secret.key=ca.crt")
	objs := splitObjects(t, helmTemplate(t, values...))
	certFile, keyFile := renderedTLSArgs(t, objs)
	serverName, caSecret := renderedServiceMonitorTLS(t, objs)
	if caSecret != "ome-scheduler-metrics-ca/ca.crt" {
		t.Fatalf("ServiceMonitor CA %q, want the secret ome-scheduler-metrics-ca, key ca.crt", caSecret)
	}

	dir := t.TempDir()
	caPEM, certPEM, keyPEM := issueServingCert(t, serverName)
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The chart points the flags at the Secret's mount; here the same files live in dir.
	args := []string{
		"--tls-cert-file=" + filepath.Join(dir, filepath.Base(certFile)),
		"--tls-private-key-file=" + filepath.Join(dir, filepath.Base(keyFile)),
		"--v=2",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proc, port, err := devenv.StartSchedulerProcess(ctx, dir, "tls-scheduler", filepath.Join(filepath.Dir(s.kubeconfig), "config.yaml"), s.kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Kill()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	verified := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}}
	token := serviceAccountToken(t, ctx, readerSA.Namespace, readerSA.Name)
	body := scrape(t, verified, port, token)
	if !strings.Contains(body, "ome_scheduler_pinned_groups") {
		t.Fatalf("verified scrape returned no ome_scheduler_ series:\n%.400s", body)
	}
	// The same CA with another server name must fail: the name is really checked.
	wrongName := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "someone-else.example", MinVersion: tls.VersionTLS12}}}
	if _, err := wrongName.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("scrape with the wrong server name: err = %v, want a certificate error", err)
	}
}

func scrape(t *testing.T, c *http.Client, port int, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("verified scrape: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("verified scrape: HTTP %d: %.300s", resp.StatusCode, b)
	}
	return string(b)
}

// renderedTLSArgs returns the --tls-cert-file and --tls-private-key-file of the Deployment.
func renderedTLSArgs(t *testing.T, objs []*unstructured.Unstructured) (cert, key string) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			for _, a := range args {
				if v, ok := strings.CutPrefix(a, "--tls-cert-file="); ok {
					cert = v
				}
				if v, ok := strings.CutPrefix(a, "--tls-private-key-file="); ok {
					key = v
				}
			}
		}
	}
	if cert == "" || key == "" {
		t.Fatalf("the Deployment has no --tls-cert-file/--tls-private-key-file (got %q, %q)", cert, key)
	}
	return cert, key
}

// renderedServiceMonitorTLS returns the ServiceMonitor endpoint's tlsConfig serverName and its
// CA as "secret/key".
func renderedServiceMonitorTLS(t *testing.T, objs []*unstructured.Unstructured) (serverName, ca string) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ServiceMonitor" {
			continue
		}
		eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
		if len(eps) == 0 {
			t.Fatal("ServiceMonitor without endpoints")
		}
		ep := eps[0].(map[string]any)
		if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); skip {
			t.Fatal("ServiceMonitor skips verification although a CA is configured")
		}
		serverName, _, _ = unstructured.NestedString(ep, "tlsConfig", "serverName")
		name, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name")
		key, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "key")
		return serverName, name + "/" + key
	}
	t.Fatal("no ServiceMonitor rendered")
	return "", ""
}

// issueServingCert makes a CA and a serving certificate for dnsName (and 127.0.0.1), as
// cert-manager would put into the Secret.
func issueServingCert(t *testing.T, dnsName string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ome-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
