package omecli

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func lease(holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ome", Name: "ome-scheduler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
}

func schedulerPod(name string, phase v1.PodPhase, c v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ome", Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{c}}, Status: v1.PodStatus{Phase: phase}}
}

// chartContainer is the chart's scheduler container: the named secure port, and the serving
// certificate's flags when tlsSecret.
func chartContainer(port int32, tlsSecret bool) v1.Container {
	c := v1.Container{Name: "scheduler", Args: []string{"--config=/etc/kubernetes/ome-scheduler/config.yaml", "--secure-port=10259"},
		Ports: []v1.ContainerPort{{Name: "https-metrics", ContainerPort: port}}}
	if tlsSecret {
		c.Args = append(c.Args, "--tls-cert-file=/etc/kubernetes/ome-scheduler-tls/tls.crt")
	}
	return c
}

// findLeader follows the Lease's holder to its pod and the pod's secure port; every way it
// can fail says which Lease or pod, and why.
func TestFindLeader(t *testing.T) {
	const holder = "ome-scheduler-7c9f6d5b8-x2x4q_3b8e0c1e-5d3c-4c7e-9a51-0f6f2a1b9c0d"
	running := func(c v1.Container) *v1.Pod { return schedulerPod("ome-scheduler-7c9f6d5b8-x2x4q", v1.PodRunning, c) }
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		port       int
		selfSigned bool
		err        string
	}{
		{"the chart's pod", []runtime.Object{lease(holder), running(chartContainer(10300, false))}, 10300, true, ""},
		{"with a serving certificate", []runtime.Object{lease(holder), running(chartContainer(10259, true))}, 10259, false, ""},
		{"no named port: --secure-port", []runtime.Object{lease(holder), running(v1.Container{Args: []string{"--secure-port=12345", "--cert-dir=/certs"}})}, 12345, false, ""},
		{"neither: 10259", []runtime.Object{lease(holder), running(v1.Container{})}, 10259, true, ""},
		{"no Lease", nil, 0, false, "no Lease ome/ome-scheduler: no ome-scheduler leads in namespace ome (pass --scheduler-namespace and --scheduler-name"},
		{"no holder", []runtime.Object{lease("")}, 0, false, "the Lease ome/ome-scheduler has no holder"},
		{"holder pod gone", []runtime.Object{lease(holder)}, 0, false, `the Lease ome/ome-scheduler is held by "` + holder + `", but pod ome/ome-scheduler-7c9f6d5b8-x2x4q does not exist`},
		{"holder pod pending", []runtime.Object{lease(holder), schedulerPod("ome-scheduler-7c9f6d5b8-x2x4q", v1.PodPending, chartContainer(10259, false))}, 0, false,
			"the leader's pod ome/ome-scheduler-7c9f6d5b8-x2x4q (holder of the Lease ome/ome-scheduler) is Pending, not Running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := findLeader(context.Background(), fake.NewClientset(tc.objs...), "ome", "ome-scheduler")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("findLeader: %+v, %v; want an error with %q", l, err, tc.err)
				}
				return
			}
			if err != nil || l.pod.Name != "ome-scheduler-7c9f6d5b8-x2x4q" || l.port != tc.port || l.selfSigned != tc.selfSigned {
				t.Fatalf("findLeader: %+v, %v; want pod ome-scheduler-7c9f6d5b8-x2x4q, port %d, self-signed %v", l, err, tc.port, tc.selfSigned)
			}
		})
	}
}

// Without get on the Lease the error names the rights kubectl ome needs.
func TestFindLeaderForbidden(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ome-scheduler", nil)
	})
	_, err := findLeader(context.Background(), cs, "ome", "ome-scheduler")
	if err == nil || !strings.Contains(err.Error(), "needs get on leases, get on pods and create on pods/portforward in namespace ome") {
		t.Fatalf("findLeader without rights: %v", err)
	}
}

// A leader serving the self-signed certificate is refused before any port-forward, telling
// which flag to pass; with --scheduler-insecure-skip-tls-verify the port-forward is tried.
func TestLeaderReservationsSelfSigned(t *testing.T) {
	const holder = "ome-scheduler-0_x"
	cs := fake.NewClientset(lease(holder), schedulerPod("ome-scheduler-0", v1.PodRunning, chartContainer(10259, false)))
	cfg := &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "secret-token"} // nothing listens
	o := &options{schedulerNamespace: "ome", schedulerName: "ome-scheduler"}
	_, where, err := o.leaderReservations(context.Background(), cfg, cs)
	if err == nil || !strings.Contains(err.Error(), "self-signed") || !strings.Contains(err.Error(), "--scheduler-insecure-skip-tls-verify") ||
		!strings.Contains(err.Error(), "--scheduler-ca") || strings.Contains(err.Error(), "port-forward to pod") || where != "the leader's pod ome/ome-scheduler-0" {
		t.Fatalf("self-signed leader without flags: %q, %v; want the flags named and no port-forward", where, err)
	}
	o.schedulerInsecure = true
	if _, _, err := o.leaderReservations(context.Background(), cfg, cs); err == nil || !strings.Contains(err.Error(), "port-forward to pod ome/ome-scheduler-0 port 10259") {
		t.Fatalf("self-signed leader with --scheduler-insecure-skip-tls-verify: %v; want the port-forward tried", err)
	}
}

// Through the port-forward the certificate is checked against the chart's Service name unless
// --scheduler-tls-server-name says otherwise; the credentials go along even unverified.
func TestTunnelConfig(t *testing.T) {
	o := &options{schedulerNamespace: "ome", schedulerName: "sched", schedulerInsecure: true}
	cfg := kubeconfig()
	cfg.CAData = []byte("api server CA")
	c := o.tunnelConfig(cfg)
	if c.ServerName != "sched-metrics.ome.svc" || !c.Insecure || c.CAData != nil || c.BearerToken != "secret-token" {
		t.Fatalf("tunnel config %+v", c.TLSClientConfig)
	}
	o = &options{schedulerNamespace: "ome", schedulerName: "sched", schedulerCA: "ca.crt", schedulerServerName: "sched.example"}
	if c := o.tunnelConfig(cfg); c.ServerName != "sched.example" || c.Insecure || c.CAFile != "ca.crt" || c.CAData != nil {
		t.Fatalf("tunnel config with --scheduler-ca: %+v", c.TLSClientConfig)
	}
}
