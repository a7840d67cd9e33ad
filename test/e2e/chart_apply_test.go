package e2e

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// warnings collects the API server's warning headers (deprecated APIs, ignored fields).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestChartObjectsApplyToAPIServer creates every object the chart renders on a real 1.35
// API server with strict server-side field validation: once with the defaults, once with a
// metrics reader ServiceAccount, the Grafana dashboard and the ServiceMonitor enabled. The
// ServiceMonitor is the only object allowed to fail, and only because its CRD
// (monitoring.coreos.com) is not installed. Objects that already exist (the chart scheduler of
// the other tests may have applied them) are validated with a dry-run update instead.
// Every Role/ClusterRole a rendered binding references must exist.
func TestChartObjectsApplyToAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := devenv.CreateNamespace(ctx, cp.Client, releaseNS); err != nil {
		t.Fatal(err)
	}
	warn := &warnings{}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandler = warn
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	type created struct {
		ri  dynamic.ResourceInterface
		obj *unstructured.Unstructured
	}
	var toDelete []created
	t.Cleanup(func() {
		bg := context.Background()
		for i := len(toDelete) - 1; i >= 0; i-- {
			c := toDelete[i]
			if err := c.ri.Delete(bg, c.obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: delete %s: %v", objectKey(c.obj), err)
			}
		}
	})

	renders := []struct {
		name string
		args []string
		// want lists the objects the render must contain.
		want []string
	}{
		{
			name: "defaults",
			want: []string{
				"ServiceAccount ome/ome-scheduler", "ConfigMap ome/ome-scheduler-config", "Deployment ome/ome-scheduler",
				"Service ome/ome-scheduler-metrics", "PodDisruptionBudget ome/ome-scheduler",
				"ClusterRoleBinding ome-scheduler-system-scheduler", "ClusterRoleBinding ome-scheduler-system-volume-scheduler",
				"ClusterRole ome-scheduler-extras", "ClusterRoleBinding ome-scheduler-extras",
				"RoleBinding kube-system/ome-scheduler-extension-apiserver-authentication-reader",
				"ClusterRoleBinding ome-scheduler-auth-delegator", "ClusterRole ome-scheduler-metrics-reader",
			},
		},
		{
			name: "reader+dashboard+servicemonitor",
			args: append(readerValues(),
				"--set", "scheduler.metrics.grafanaDashboard.enabled=true",
				"--set", "scheduler.metrics.serviceMonitor.enabled=true"),
			want: []string{
				"ClusterRoleBinding ome-scheduler-metrics-reader", "ConfigMap ome/ome-scheduler-grafana-dashboard",
				"ServiceMonitor ome/ome-scheduler",
			},
		},
	}

	referenced := map[string]bool{} // "ClusterRole name" / "Role ns/name"
	for _, r := range renders {
		objs := splitObjects(t, helmTemplate(t, r.args...))
		got := map[string]bool{}
		var unmapped []string
		for _, o := range objs {
			got[objectKey(o)] = true
			ri, err := resourceFor(dc, o)
			if meta.IsNoMatchError(err) {
				unmapped = append(unmapped, objectKey(o)+" ("+o.GetAPIVersion()+")")
				continue
			}
			if err != nil {
				t.Errorf("%s: %s: %v", r.name, objectKey(o), err)
				continue
			}
			_, err = ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict", FieldManager: "ome-e2e"})
			switch {
			case err == nil:
				toDelete = append(toDelete, created{ri, o})
			case apierrors.IsAlreadyExists(err):
				// Validate against the live object without changing it.
				cur, gerr := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
				if gerr != nil {
					t.Errorf("%s: get existing %s: %v", r.name, objectKey(o), gerr)
					continue
				}
				o = o.DeepCopy()
				o.SetResourceVersion(cur.GetResourceVersion())
				if _, err := ri.Update(ctx, o, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
					t.Errorf("%s: %s rejected (dry-run update of the existing object): %v", r.name, objectKey(o), err)
				}
			default:
				t.Errorf("%s: %s rejected by the API server: %v", r.name, objectKey(o), err)
			}
			for _, w := range warn.take() {
				t.Errorf("%s: %s: API server warning: %s", r.name, objectKey(o), w)
			}
			if ref, ok := roleRef(o); ok {
				referenced[ref] = true
			}
		}
		for _, w := range r.want {
			if !got[w] {
				t.Errorf("%s: render lacks %s (rendered: %v)", r.name, w, sortedKeys(got))
			}
		}
		for _, u := range unmapped {
			if !strings.HasPrefix(u, "ServiceMonitor ") || !strings.Contains(u, "monitoring.coreos.com/") {
				t.Errorf("%s: %s: kind unknown to a 1.35 API server", r.name, u)
			}
		}
		if r.name != "defaults" && len(unmapped) != 1 {
			t.Errorf("%s: want exactly the ServiceMonitor unmapped (CRD absent), got %v", r.name, unmapped)
		}
		if r.name == "defaults" && len(unmapped) != 0 {
			t.Errorf("defaults: unexpected unknown kinds %v", unmapped)
		}
		t.Logf("%s: %d objects, %d accepted by the API server, unmapped: %v", r.name, len(objs), len(objs)-len(unmapped), unmapped)
	}

	// The bindings' role references resolve on the real server.
	for _, must := range []string{
		"ClusterRole system:kube-scheduler", "ClusterRole system:volume-scheduler",
		"Role kube-system/extension-apiserver-authentication-reader", "ClusterRole system:auth-delegator",
		"ClusterRole ome-scheduler-extras", "ClusterRole ome-scheduler-metrics-reader",
	} {
		if !referenced[must] {
			t.Errorf("no rendered binding references %s (references: %v)", must, sortedKeys(referenced))
		}
	}
	for ref := range referenced {
		kind, name, _ := strings.Cut(ref, " ")
		var err error
		if kind == "Role" {
			ns, n, _ := strings.Cut(name, "/")
			_, err = cp.Client.RbacV1().Roles(ns).Get(ctx, n, metav1.GetOptions{})
		} else {
			_, err = cp.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			t.Errorf("a chart binding references %s, which the API server does not have: %v", ref, err)
		}
	}
}

// roleRef returns "ClusterRole name" or "Role ns/name" for a (Cluster)RoleBinding.
func roleRef(o *unstructured.Unstructured) (string, bool) {
	if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
		return "", false
	}
	kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
	name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
	if kind == "Role" {
		return "Role " + o.GetNamespace() + "/" + name, true
	}
	return kind + " " + name, true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
