package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/moirai-internal/ome-scheduler/internal/omecli"
)

// clusterReader is what `kubectl ome domains` reads besides the scheduler: nodes and pods.
const clusterReader = "ome-e2e-cluster-reader"

// checkDebugReaderFindsLeader runs `kubectl ome domains` as ServiceAccounts that may read nodes
// and pods. debugSA, the subject of the chart's {name}-debug-reader ClusterRole (/configz)
// and of the Roles docs/reference.md §8 creates in the scheduler's namespace (get on leases
// and pods, create on pods/portforward; the chart grants no rule on pods), reads the leader's
// reservations through the port-forward, over WebSocket and SPDY; a ServiceAccount without
// them is told which rights it lacks.
func checkDebugReaderFindsLeader(t *testing.T, ctx context.Context) {
	t.Helper()
	applyDebugReader(t, ctx)
	ensureServiceAccount(t, ctx, readerSA.Namespace, "nobody")
	debugUser := rbacv1.Subject{Kind: "ServiceAccount", Namespace: debugSA.Namespace, Name: debugSA.Name}
	createRole(t, ctx, "", clusterReader, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list"}},
		debugUser, rbacv1.Subject{Kind: "ServiceAccount", Namespace: readerSA.Namespace, Name: "nobody"})
	// kubectl -n ome create role ome-debug --verb=get --resource=leases.coordination.k8s.io,pods
	// (one rule per API group; two Roles here)
	createRole(t, ctx, releaseNS, "ome-debug", rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}}, debugUser)
	createRole(t, ctx, releaseNS, "ome-debug-pods", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}, debugUser)
	// kubectl -n ome create role ome-debug-forward --verb=create --resource=pods/portforward
	createRole(t, ctx, releaseNS, "ome-debug-forward", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create"}}, debugUser)
	domains := func(ns, sa string) (known bool, note string) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		writeTokenKubeconfig(t, kubeconfig, serviceAccountToken(t, ctx, ns, sa))
		var out, errOut bytes.Buffer
		code := omecli.Run([]string{"domains", "-o", "json", "--scheduler-insecure-skip-tls-verify", "--kubeconfig", kubeconfig},
			genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		var r struct {
			ReservationsKnown bool `json:"reservationsKnown"`
		}
		if code != omecli.ExitOK || json.Unmarshal(out.Bytes(), &r) != nil {
			t.Fatalf("kubectl ome domains as %s/%s: exit %d, %q, %s", ns, sa, code, out.String(), errOut.String())
		}
		return r.ReservationsKnown, errOut.String()
	}
	for _, websockets := range []string{"true", "false"} {
		t.Setenv("KUBECTL_PORT_FORWARD_WEBSOCKETS", websockets)
		var known bool
		var note string
		// RBAC changes reach the API server's authorizer within a moment.
		waitFor(ctx, 20*time.Second, func(context.Context) bool { known, note = domains(debugSA.Namespace, debugSA.Name); return known })
		if !known {
			t.Errorf("kubectl ome domains as the chart's debug reader (WebSocket %s): reservations unknown: %s", websockets, note)
		}
	}
	if known, note := domains(readerSA.Namespace, "nobody"); known || !strings.Contains(note, "cannot read the leader's Lease "+releaseNS+"/"+releaseName) ||
		!strings.Contains(note, "needs get on leases, get on pods and create on pods/portforward in namespace "+releaseNS) {
		t.Errorf("kubectl ome domains without the debug reader roles: reservations known %v, note %q; want the missing rights named", known, note)
	}
}

// createRole creates a Role in ns (a ClusterRole when ns is "") with one rule, bound to the
// subjects, and deletes both at the end of the test.
func createRole(t *testing.T, ctx context.Context, ns, name string, rule rbacv1.PolicyRule, subjects ...rbacv1.Subject) {
	t.Helper()
	rbac := cp.Client.RbacV1()
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	var err error
	if ns == "" {
		ref.Kind = "ClusterRole"
		if _, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err == nil {
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
	} else if _, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err == nil {
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("create %s %s/%s and its binding: %v", ref.Kind, ns, name, err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		if ns == "" {
			_ = rbac.ClusterRoleBindings().Delete(bg, name, metav1.DeleteOptions{})
			_ = rbac.ClusterRoles().Delete(bg, name, metav1.DeleteOptions{})
			return
		}
		_ = rbac.RoleBindings(ns).Delete(bg, name, metav1.DeleteOptions{})
		_ = rbac.Roles(ns).Delete(bg, name, metav1.DeleteOptions{})
	})
}
