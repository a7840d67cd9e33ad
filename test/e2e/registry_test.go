package e2e

import (
	"archive/tar"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// localRegistry is the CNCF distribution registry (bin/registry) on a loopback port, serving
// TLS with a certificate of a CA of its own: clients trust it through SSL_CERT_FILE=caFile, as
// they would trust a registry with a private CA, so that helm, ko and crane run without
// --plain-http or --insecure flags.
type localRegistry struct {
	host   string // 127.0.0.1:PORT
	caFile string
	proc   *devenv.Process
}

const registryConfig = `version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
`

func startRegistry(t *testing.T) *localRegistry {
	t.Helper()
	dir := t.TempDir()
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	caPEM, certPEM, keyPEM := issueServingCert(t, "localhost")
	r := &localRegistry{host: host, caFile: filepath.Join(dir, "ca.pem")}
	files := map[string][]byte{"ca.pem": caPEM, "cert.pem": certPEM, "key.pem": keyPEM,
		"config.yml": []byte(fmt.Sprintf(registryConfig, filepath.Join(dir, "data"), host,
			filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")))}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The registry's tracing would try an OTLP collector on localhost.
	r.proc, err = devenv.StartProcessEnv(dir, "registry", "registry", []string{"OTEL_TRACES_EXPORTER=none"},
		"serve", filepath.Join(dir, "config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.proc.Stop(5 * time.Second) })
	dumpLogOnFailure(t, r.proc)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("https://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		if r.proc.Exited() || time.Now().After(deadline) {
			t.Fatalf("registry on %s did not answer /v2/ (last error %v); log:\n%s", host, err, logTail(r.proc.LogPath, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pushBaseImage pushes a stand-in for gcr.io/distroless/static:nonroot to the registry as
// REGISTRY/base/static:nonroot: an index with an image for each of platforms, each a single
// layer with distroless's home directory of the nonroot user and /tmp, and distroless's
// config: user 65532:65532, working directory /home/nonroot, its PATH and SSL_CERT_FILE. ko
// only needs a base of the right platforms, and the scheduler's binary is static.
func (r *localRegistry) pushBaseImage(t *testing.T, s *guideShell, platforms []string) string {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "base.tar")
	f, err := os.Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, d := range []tar.Header{{Name: "home/", Mode: 0o755}, {Name: "home/nonroot/", Mode: 0o700, Uid: 65532, Gid: 65532}, {Name: "tmp/", Mode: 0o1777}} {
		d.Typeflag = tar.TypeDir
		if err := tw.WriteHeader(&d); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base := r.host + "/base/static"
	var manifests []string
	for _, p := range platforms {
		tag := base + ":" + strings.ReplaceAll(p, "/", "-")
		shOK(t, s, fmt.Sprintf("crane append --oci-empty-base -f %s -t %s", empty, tag+"-layer"))
		shOK(t, s, fmt.Sprintf("crane mutate %s --set-platform %s --user 65532:65532 --workdir /home/nonroot "+
			"--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt -t %s",
			tag+"-layer", p, tag))
		manifests = append(manifests, "-m "+tag)
	}
	shOK(t, s, fmt.Sprintf("crane index append %s -t %s:nonroot", strings.Join(manifests, " "), base))
	return base + ":nonroot"
}

// shOK runs a command of the test itself (not of a guide) in the guide's shell.
func shOK(t *testing.T, s *guideShell, command string) string {
	t.Helper()
	out, err := s.sh(t, command, 5*time.Minute)
	if err != nil {
		t.Fatalf("$ %s: %v\n%s", command, err, out)
	}
	return out
}
