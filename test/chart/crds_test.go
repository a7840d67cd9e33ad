package chart_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart carries the scheduler-plugins PodGroup CRD in crds/, with the keep annotations. Helm creates it on the first
// install when the cluster lacks it, skips it when it exists, never upgrades or deletes it, and
// leaves it out with --skip-crds.

const (
	crdFile = "scheduling.x-k8s.io_podgroups.yaml"
	crdName = "podgroups.scheduling.x-k8s.io"
)

// moduleCRD returns the PodGroup CRD of the pinned sigs.k8s.io/scheduler-plugins module, the
// file `make crd` copies.
func moduleCRD(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/scheduler-plugins: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", crdFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crdKeep are the annotations `make crd` adds to the module's CRD: Argo CD, which applies a
// chart's crds/ like any other object, must neither prune it nor delete it with the
// Application, and Helm keeps it should it ever become a release object. Deleting the CRD
// deletes every PodGroup in the cluster.
var crdKeep = map[string]string{
	"argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
	"helm.sh/resource-policy":         "keep",
}

// annotatedCRD is the module's CRD with crdKeep inserted after the first line
// "  annotations:" (the metadata's), in the order `make crd` writes them.
func annotatedCRD(t *testing.T) []byte {
	t.Helper()
	const at = "\n  annotations:\n"
	src := string(moduleCRD(t))
	i := strings.Index(src, at)
	if i < 0 {
		t.Fatal("the module's CRD has no metadata.annotations line to add the keep annotations after")
	}
	i += len(at)
	add := "    argocd.argoproj.io/sync-options: " + crdKeep["argocd.argoproj.io/sync-options"] + "\n" +
		"    helm.sh/resource-policy: " + crdKeep["helm.sh/resource-policy"] + "\n"
	return []byte(src[:i] + add + src[i:])
}

// Both copies carry the keep annotations, and without them they are the module's CRD.
func TestCRDKeepAnnotations(t *testing.T) {
	var module map[string]any
	if err := yaml.Unmarshal(moduleCRD(t), &module); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(chartDir(t), "crds", crdFile),
		filepath.Join(repoRoot(t), "manifests", "crds", crdFile),
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := yaml.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		ann, _ := dig(got, "metadata", "annotations").(map[string]any)
		for k, v := range crdKeep {
			if ann[k] != v {
				t.Errorf("%s: annotation %s is %v, want %q", p, k, ann[k], v)
			}
			delete(ann, k)
		}
		if !reflect.DeepEqual(got, module) {
			t.Errorf("%s without the keep annotations is not the module's CRD (run make crd)", p)
		}
	}
}

// crds/ holds the module's CRD plus the keep annotations and nothing else, byte for byte (what
// `make crd-check` checks), and so does manifests/crds/.
func TestChartCRDIsTheModules(t *testing.T) {
	want := annotatedCRD(t)
	entries, err := os.ReadDir(filepath.Join(chartDir(t), "crds"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	wantEq(t, "files in charts/ome-scheduler/crds", strings.Join(names, " "), crdFile)
	for _, p := range []string{
		filepath.Join(chartDir(t), "crds", crdFile),
		filepath.Join(repoRoot(t), "manifests", "crds", crdFile),
	} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the scheduler-plugins module's %s plus the keep annotations (run make crd)", p, crdFile)
		}
	}
}

// `helm show crds` prints the annotated CRD, for the chart directory and for the package.
func TestShowCRDs(t *testing.T) {
	want := string(annotatedCRD(t)) + "\n"
	dist := t.TempDir()
	if res := runHelm(t, "package", chartDir(t), "--destination", dist); res.err != nil {
		t.Fatalf("helm package: %v\n%s", res.err, res.stderr)
	}
	pkgs, _ := filepath.Glob(filepath.Join(dist, "ome-scheduler-*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package wrote %v", pkgs)
	}
	for _, chart := range []string{chartDir(t), pkgs[0]} {
		res := runHelm(t, "show", "crds", chart)
		if res.err != nil {
			t.Fatalf("helm show crds %s: %v\n%s", chart, res.err, res.stderr)
		}
		if res.stdout != want {
			t.Errorf("helm show crds %s: not the module's CRD:\n%s", chart, res.stdout)
		}
	}
}

// `helm template --include-crds` renders the CRD first and unchanged; plain `helm template`
// renders no CRD (Helm installs crds/ apart from the release's objects).
func TestTemplateIncludeCRDs(t *testing.T) {
	want := "---\n# Source: ome-scheduler/crds/" + crdFile + "\n" + string(annotatedCRD(t)) + "\n"
	res := template(t, "--include-crds")
	if res.err != nil {
		t.Fatalf("helm template --include-crds: %v\n%s", res.err, res.stderr)
	}
	if !strings.HasPrefix(res.stdout, want) {
		t.Errorf("helm template --include-crds does not start with the module's CRD:\n%.600s", res.stdout)
	}
	crds := parseRender(t, res.stdout).ofKind("CustomResourceDefinition")
	if len(crds) != 1 || crds[0].name() != crdName {
		t.Errorf("helm template --include-crds: want one CRD %s, got %d", crdName, len(crds))
	}
	if n := len(render(t).ofKind("CustomResourceDefinition")); n != 0 {
		t.Errorf("helm template without --include-crds renders %d CRDs", n)
	}
}

// helm install against a stand-in API server that already serves the CRD: Helm sends the
// module's CRD, is told it exists and goes on (the install then stops at the release's own
// objects, which the stand-in server cannot validate); with --skip-crds it sends no CRD.
func TestInstallCRDs(t *testing.T) {
	var want map[string]any
	if err := yaml.Unmarshal(annotatedCRD(t), &want); err != nil {
		t.Fatal(err)
	}
	const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	install := func(t *testing.T, args ...string) (helmResult, []string, [][]byte) {
		srv := newStandInAPIServer(crdPath)
		defer srv.Close()
		res := runHelm(t, append([]string{"install", releaseName, chartDir(t), "--namespace", releaseNS,
			"--kube-apiserver", srv.URL, "--debug"}, args...)...)
		if res.err == nil {
			t.Fatalf("helm install against the stand-in API server succeeded:\n%s", res.stdout)
		}
		// Past the CRDs: the stand-in server has no OpenAPI to validate the release's objects.
		wantContains(t, "helm install error", res.stderr, "unable to build kubernetes objects from release manifest")
		reqs, posts := srv.log()
		return res, reqs, posts
	}

	t.Run("sends the CRD, skips it when it exists", func(t *testing.T) {
		res, reqs, posts := install(t)
		if len(posts) != 1 {
			t.Fatalf("helm install sent %d CRDs, want 1; requests:\n%s", len(posts), strings.Join(reqs, "\n"))
		}
		var got map[string]any
		if err := yaml.Unmarshal(posts[0], &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("helm install sent a CRD that is not the module's:\n%s", posts[0])
		}
		wantContains(t, "helm install --debug", res.stderr, "CRD "+crdName+" is already present. Skipping.")
	})
	t.Run("--skip-crds", func(t *testing.T) {
		res, reqs, posts := install(t, "--skip-crds")
		for _, r := range reqs {
			if strings.Contains(r, "customresourcedefinitions") {
				t.Errorf("helm install --skip-crds: request %s", r)
			}
		}
		if len(posts) != 0 {
			t.Errorf("helm install --skip-crds sent %d CRDs", len(posts))
		}
		wantNotContains(t, "helm install --skip-crds --debug", res.stderr, crdName)
	})
}

// standInAPIServer answers what helm install asks before it creates a release's objects:
// the server version (1.35), discovery of the core and apiextensions.k8s.io/v1 APIs, and
// "already exists" to every CRD create. Everything else is 404.
type standInAPIServer struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []string
	posts [][]byte
}

func newStandInAPIServer(crdPath string) *standInAPIServer {
	s := &standInAPIServer{}
	fixed := map[string]string{
		"/version": `{"major":"1","minor":"35","gitVersion":"v1.35.4","platform":"linux/amd64"}`,
		"/api":     `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
		"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apiextensions.k8s.io",` +
			`"versions":[{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}],` +
			`"preferredVersion":{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"secrets","singularName":"secret",` +
			`"namespaced":true,"kind":"Secret","verbs":["create","delete","get","list","update"]}]}`,
		"/apis/apiextensions.k8s.io/v1": `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apiextensions.k8s.io/v1",` +
			`"resources":[{"name":"customresourcedefinitions","singularName":"customresourcedefinition","namespaced":false,` +
			`"kind":"CustomResourceDefinition","verbs":["create","delete","get","list","update"]}]}`,
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Method+" "+r.URL.Path)
		if r.Method == http.MethodPost && r.URL.Path == crdPath {
			s.posts = append(s.posts, body)
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && fixed[r.URL.Path] != "":
			_, _ = io.WriteString(w, fixed[r.URL.Path])
		case r.Method == http.MethodPost && r.URL.Path == crdPath:
			w.WriteHeader(http.StatusConflict)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,`+
				`"message":"customresourcedefinitions.apiextensions.k8s.io %q already exists",`+
				`"details":{"name":%q,"group":"apiextensions.k8s.io","kind":"customresourcedefinitions"}}`, crdName, crdName)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	return s
}

func (s *standInAPIServer) log() ([]string, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...), append([][]byte(nil), s.posts...)
}
