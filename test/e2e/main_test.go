// Package e2e checks the shipped artefacts end to end: the Helm chart's objects against a real
// kube-apiserver, bin/ome-scheduler running with exactly the chart's RBAC, ServiceAccount and
// configuration, its secure /metrics endpoint, and the published image and chart (TestQuickstart, on
// a control plane of its own, like TestInstallGuide). One control plane (etcd +
// kube-apiserver from bin/, RBAC on, no kubelets, no controller-manager) serves the package.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

const (
	releaseName = "ome-scheduler"
	releaseNS   = "ome"
	kubeVersion = "1.35.0"
)

var (
	cp  *devenv.ControlPlane
	dyn dynamic.Interface
)

func TestMain(m *testing.M) {
	devenv.QuietKlog()
	flag.Parse()
	var err error
	cp, err = devenv.Start(devenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot start the control plane:", err)
		os.Exit(1)
	}
	if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		cp.Stop()
		fmt.Fprintln(os.Stderr, "e2e: dynamic client:", err)
		os.Exit(1)
	}
	code := m.Run()
	// The chart-deployed scheduler is shared by the tests that need it (see fixture.go).
	stopChartScheduler()
	cp.Stop()
	os.Exit(code)
}

// repoRoot returns the repository root or fails the test.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := devenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helmTemplate renders the chart with bin/helm (or $HELM) like a user would:
// `helm template ome-scheduler charts/ome-scheduler --kube-version 1.35.0 -n ome <extra>`.
func helmTemplate(t *testing.T, extra ...string) []byte {
	t.Helper()
	out, err := devenv.HelmTemplate(context.Background(), devenv.HelmRender{
		Release: releaseName, Namespace: releaseNS, KubeVersion: kubeVersion, Args: extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// splitObjects splits a multi-document YAML stream into objects, skipping empty documents.
// Each document must be free of duplicate keys (the API server's strict validation never sees
// them once the document is decoded into a map).
func splitObjects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	var doc strings.Builder
	flush := func() {
		text := doc.String()
		doc.Reset()
		if strings.TrimSpace(stripComments(text)) == "" {
			return
		}
		m := map[string]any{}
		if err := yaml.UnmarshalStrict([]byte(text), &m); err != nil {
			t.Fatalf("rendered document does not parse strictly: %v\n%s", err, text)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		doc.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return objs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// objectKey names an object for messages: Kind ns/name or Kind name.
func objectKey(o *unstructured.Unstructured) string {
	if o.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
	return fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
}

// mapper resolves kinds through the API server's discovery (fresh each call: CRDs come and go).
func mapper() *restmapper.DeferredDiscoveryRESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.Client.Discovery()))
}

// resourceFor returns the dynamic resource interface for the object, defaulting the
// namespace of namespaced kinds to the release namespace.
func resourceFor(dc dynamic.Interface, o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := mapper().RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			o.SetNamespace(releaseNS)
		}
		return dc.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	if o.GetNamespace() != "" {
		return nil, errors.New("cluster-scoped object carries a namespace")
	}
	return dc.Resource(m.Resource), nil
}
