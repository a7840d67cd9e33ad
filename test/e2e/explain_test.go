package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/moirai-internal/ome-scheduler/internal/omecli"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// debugSA is bound to the chart's debug reader role by scheduler.metrics.debugReader.subjects.
var debugSA = struct{ Namespace, Name string }{"monitoring", "ome-debug"}

// TestReservationsEndpoint: the binary serves its pins as the omeGangPack entry of /configz,
// behind the secure port's authorization: the chart's {name}-debug-reader role lets a bound
// subject read it, the metrics reader and others are refused; kubectl ome reads it and says
// "reservations unknown" without it.
func TestReservationsEndpoint(t *testing.T) {
	s := getChartScheduler(t)
	g := getDemoGang(t)
	if g.err != nil {
		t.Fatalf("demo gang: %v", g.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	applyDebugReader(t, ctx)
	url := fmt.Sprintf("https://127.0.0.1:%d", s.port)
	for _, tc := range []struct {
		who, ns, name string
		want          int
	}{
		{"the debug reader", debugSA.Namespace, debugSA.Name, http.StatusOK},
		{"the metrics reader", readerSA.Namespace, readerSA.Name, http.StatusForbidden},
		{"nobody", readerSA.Namespace, "nobody", http.StatusForbidden},
	} {
		token := serviceAccountToken(t, ctx, tc.ns, tc.name)
		var code int
		var body []byte
		// RBAC changes reach the API server's authorizer within a moment.
		waitFor(ctx, 20*time.Second, func(ctx context.Context) bool { code, body = getConfigz(t, ctx, url, token); return code == tc.want })
		if code != tc.want {
			t.Fatalf("GET /configz as %s: %d (%.200s), want %d", tc.who, code, body, tc.want)
		}
		if code != http.StatusOK {
			continue
		}
		r, err := explain.Decode(body)
		if err != nil || !r.Leader || r.Args == nil || r.Args.PodGroupTopologyKeyAnnotation != "ome.io/topology-key" {
			t.Fatalf("omeGangPack entry %+v (%v): want the leader's, with the chart's args", r, err)
		}
	}
	checkKubectlOme(t, url, g)
}

// applyDebugReader applies the chart's {name}-debug-reader ClusterRole (get on /configz) and
// its binding, with debugSA as the subject.
func applyDebugReader(t *testing.T, ctx context.Context) {
	t.Helper()
	ensureServiceAccount(t, ctx, debugSA.Namespace, debugSA.Name)
	subjects := fmt.Sprintf(`scheduler.metrics.debugReader.subjects=[{"kind":"ServiceAccount","name":%q,"namespace":%q}]`, debugSA.Name, debugSA.Namespace)
	applied := 0
	for _, o := range splitObjects(t, helmTemplate(t, append(readerValues(), "--set-json", subjects)...)) {
		if o.GetName() != releaseName+"-debug-reader" {
			continue
		}
		ri, err := resourceFor(dyn, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "ome-e2e", Force: true}); err != nil {
			t.Fatalf("apply %s: %v", objectKey(o), err)
		}
		applied++
	}
	if applied != 2 {
		t.Fatalf("the chart rendered %d objects %s-debug-reader, want 2 (the ClusterRole and its binding)", applied, releaseName)
	}
}

func getConfigz(t *testing.T, ctx context.Context, url, token string) (int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificate of a local process
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/configz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET /configz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// checkKubectlOme runs kubectl ome (as the admin) against the binary: explain shows the demo
// gang placed in its clique with the reservations read (the scheduler's serving certificate
// is self-signed: the port-forward flags skip its verification and opt in to sending the
// credentials); without those flags the certificate is refused and the reservations are
// unknown, as they are without --scheduler-url when the leader cannot be reached (here the
// Lease's holder is a process, not a pod: TestKubectlOmeFindsTheLeader gives it one); a bad
// command line exits 2.
func checkKubectlOme(t *testing.T, url string, g *demoGang) {
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := omecli.Run(append(args, "--kubeconfig", cp.KubeConfigPath), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run("explain", "podgroup", demoNS, "-n", demoNS, "-o", "json", "--scheduler-url", url)
	var unverified explain.Result
	if code != omecli.ExitOK || json.Unmarshal([]byte(out), &unverified) != nil || unverified.ReservationsKnown ||
		!strings.Contains(errOut, "certificate") {
		t.Errorf("kubectl ome explain against a self-signed endpoint without flags: exit %d, %q, %s; want reservations unknown (certificate)", code, out, errOut)
	}
	code, out, errOut = run("explain", "podgroup", demoNS, "-n", demoNS, "-o", "json", "--scheduler-url", url,
		"--scheduler-insecure-skip-tls-verify", "--scheduler-insecure-send-credentials")
	var r explain.Result
	if code != omecli.ExitOK || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("kubectl ome explain: exit %d, %q, %s", code, out, errOut)
	}
	var node string
	for _, n := range g.nodes {
		node = n
	}
	n, err := cp.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.ReservationsKnown || r.ChosenDomain != n.Labels[r.TopologyKey] || !strings.HasPrefix(r.Reason, "the gang is placed: 2 members") {
		t.Errorf("kubectl ome explain: %+v; want the demo gang placed in %s, reservations known", r, n.Labels[r.TopologyKey])
	}
	code, out, errOut = run("domains", "--topology-key", r.TopologyKey)
	if code != omecli.ExitOK || !strings.Contains(out, "reservations unknown: the Lease "+releaseNS+"/"+releaseName+" is held by") || !strings.Contains(out, "LARGEST GANG") {
		t.Errorf("kubectl ome domains without --scheduler-url: exit %d, %q, %s", code, out, errOut)
	}
	if code, _, errOut = run("explain"); code != omecli.ExitUsage {
		t.Errorf("kubectl ome explain without a name: exit %d (%s), want %d", code, errOut, omecli.ExitUsage)
	}
}
