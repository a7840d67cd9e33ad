package omecli

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// schedulerEndpoint is an httptest TLS server standing in for the scheduler's secure port: it
// records the Authorization header of every request that reaches it.
type schedulerEndpoint struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newSchedulerEndpoint(t *testing.T) *schedulerEndpoint {
	e := &schedulerEndpoint{}
	e.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auths = append(e.auths, r.Header.Get("Authorization"))
		e.mu.Unlock()
		_, _ = w.Write([]byte(`{"` + explain.DebugKey + `":{"leader":true}}`))
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *schedulerEndpoint) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auths...)
}

// caFile writes the endpoint's certificate (its own CA) to a file.
func (e *schedulerEndpoint) caFile(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// kubeconfig is a client config with a bearer token, as a kubeconfig's user gives it.
func kubeconfig() *rest.Config {
	return &rest.Config{Host: "https://api.example:6443", BearerToken: "secret-token"}
}

// Without --scheduler-ca the endpoint is verified against the kubeconfig's CA (here: the
// system roots), so a self-signed endpoint is refused before any request, credentials
// included, reaches it.
func TestReservationsVerifiesByDefault(t *testing.T) {
	e := newSchedulerEndpoint(t)
	o := &options{schedulerURL: e.URL}
	_, _, err := o.reservations(context.Background(), kubeconfig())
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "--scheduler-ca") {
		t.Errorf("reservations from an unverified endpoint: err %v, want a certificate error naming --scheduler-ca", err)
	}
	if got := e.seen(); len(got) != 0 {
		t.Fatalf("requests reached the unverified endpoint with Authorization %q, want none", got)
	}
}

// With --scheduler-ca the endpoint is verified, and the kubeconfig's credentials go with the
// request.
func TestReservationsWithCASendsCredentials(t *testing.T) {
	e := newSchedulerEndpoint(t)
	o := &options{schedulerURL: e.URL, schedulerCA: e.caFile(t)}
	r, _, err := o.reservations(context.Background(), kubeconfig())
	if err != nil || !r.Leader {
		t.Fatalf("reservations with the CA: %+v, %v; want the leader's", r, err)
	}
	if got := e.seen(); len(got) != 1 || got[0] != "Bearer secret-token" {
		t.Fatalf("Authorization headers %q, want the kubeconfig's token once", got)
	}
}

// --scheduler-insecure-skip-tls-verify reaches the unverified endpoint without any credential;
// --scheduler-insecure-send-credentials is the explicit opt-in that sends them.
func TestReservationsInsecureSendsNoCredentials(t *testing.T) {
	e := newSchedulerEndpoint(t)
	o := &options{schedulerURL: e.URL, schedulerInsecure: true}
	cfg := kubeconfig()
	cfg.CertData, cfg.KeyData = []byte("client-cert"), []byte("client-key") // dropped as well
	if r, _, err := o.reservations(context.Background(), cfg); err != nil || !r.Leader {
		t.Fatalf("reservations without verification: %+v, %v", r, err)
	}
	if got := e.seen(); len(got) != 1 || got[0] != "" {
		t.Fatalf("Authorization headers %q at an unverified endpoint, want one request without any", got)
	}
	o.schedulerSendCredentials = true
	if _, _, err := o.reservations(context.Background(), kubeconfig()); err != nil {
		t.Fatal(err)
	}
	if got := e.seen(); len(got) != 2 || got[1] != "Bearer secret-token" {
		t.Fatalf("Authorization headers %q with the opt-in, want the token on the second request", got)
	}
}

// A plain-HTTP endpoint is verified by nothing either: no credentials without the opt-in.
func TestReservationsPlainHTTPSendsNoCredentials(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"` + explain.DebugKey + `":{"leader":true}}`))
	}))
	t.Cleanup(srv.Close)
	o := &options{schedulerURL: srv.URL}
	if _, _, err := o.reservations(context.Background(), kubeconfig()); err != nil {
		t.Fatal(err)
	}
	o.schedulerSendCredentials = true
	if _, _, err := o.reservations(context.Background(), kubeconfig()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 2 || auths[0] != "" || auths[1] != "Bearer secret-token" {
		t.Fatalf("Authorization headers %q, want none, then the token with the opt-in", auths)
	}
}

// The scheduler endpoint's flags that contradict each other are usage errors.
func TestSchedulerFlagConflicts(t *testing.T) {
	for _, args := range [][]string{
		{"domains", "--scheduler-ca", "ca.crt", "--scheduler-insecure-skip-tls-verify"},
		{"domains", "--scheduler-insecure-send-credentials"},
	} {
		var out, errOut bytes.Buffer
		if code := Run(args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}); code != ExitUsage {
			t.Errorf("kubectl ome %v: exit %d (%s), want %d", args, code, errOut.String(), ExitUsage)
		}
	}
}
