package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// helm runs bin/helm against the local control plane and returns its combined output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	path, err := devenv.HelmBin()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, append(args, "--kubeconfig", cp.KubeConfigPath)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// `helm install` with a values file (hub and image tag) works against a 1.35 API server, the
// chart's refusals stop an install, and `helm uninstall` removes every chart object but the
// PodGroup CRD. The
// release uses its own scheduler.name so its cluster-scoped objects do not collide with the
// other tests' chart objects.
func TestHelmInstallAndUninstall(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "charts", "ome-scheduler")
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("global:\n  hub: registry.example.com/ome\nscheduler:\n  name: ome-helm\n  image:\n    tag: v1.3.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, set, want string }{
		{"W8", "scheduler.replicaCount=1", "scheduler.podDisruptionBudget.minAvailable must be less than scheduler.replicaCount so voluntary maintenance can make progress"},
		{"W9", "scheduler.leaderElect=false", "scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1"},
	} {
		out, err := helm(t, "install", "refused", chart, "--namespace", "ome-helm-refused", "--create-namespace", "-f", values, "--set", tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: helm install with %s: err %v, output %q; want a failure containing %q", tc.name, tc.set, err, out, tc.want)
		}
	}

	out, err := helm(t, "install", "ome-scheduler", chart, "--namespace", "ome-helm", "--create-namespace", "-f", values)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	for _, want := range []string{"NAME: ome-scheduler", "NAMESPACE: ome-helm", "STATUS: deployed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("helm install output lacks %q:\n%s", want, out)
		}
	}
	ctx := t.Context()
	d, err := cp.Client.AppsV1().Deployments("ome-helm").Get(ctx, "ome-helm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment ome-helm/ome-helm: %v", err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/ome/ome-scheduler:v1.3.0" {
		t.Fatalf("image %q, want registry.example.com/ome/ome-scheduler:v1.3.0", img)
	}
	if _, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, "ome-helm-extras", metav1.GetOptions{}); err != nil {
		t.Fatalf("ClusterRole ome-helm-extras: %v", err)
	}

	out, err = helm(t, "uninstall", "ome-scheduler", "--namespace", "ome-helm")
	if err != nil || !strings.Contains(out, `release "ome-scheduler" uninstalled`) {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	if _, err := cp.Client.AppsV1().Deployments("ome-helm").Get(ctx, "ome-helm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment still present after uninstall: %v", err)
	}
	for _, name := range []string{"ome-helm-extras", "ome-helm-metrics-reader"} {
		if _, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("ClusterRole %s still present after uninstall: %v", name, err)
		}
	}
	if _, err := cp.Client.RbacV1().RoleBindings("kube-system").Get(ctx, "ome-helm-extension-apiserver-authentication-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("RoleBinding in kube-system still present after uninstall: %v", err)
	}
	// The PodGroup CRD stays: uninstall must not delete users' PodGroups.
	if _, err := cp.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1"); err != nil {
		t.Fatalf("PodGroup API gone after uninstall: %v", err)
	}
}
