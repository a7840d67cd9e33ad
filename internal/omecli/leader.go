package omecli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The chart's defaults: the release namespace of the documentation, scheduler.name (the
// leader-election Lease's name and the prefix of every object) and the secure port.
const (
	DefaultSchedulerNamespace = "ome"
	DefaultSchedulerName      = "ome-scheduler"
	DefaultSecurePort         = 10259
	// securePortName is the name of the secure port in the chart's pod spec.
	securePortName = "https-metrics"
)

// leader is the leading replica's pod and the port of its secure endpoint in the pod.
type leader struct {
	pod  *v1.Pod
	port int
	// selfSigned: the scheduler serves the self-signed certificate it makes at startup
	// (neither --tls-cert-file nor --cert-dir), which nothing can verify.
	selfSigned bool
}

// findLeader finds the leading replica as kube-scheduler's leader election records it: the
// Lease ns/name (the configuration's leaderElection resourceNamespace/resourceName; the chart
// sets the release namespace and scheduler.name) holds "<hostname>_<random id>", and a pod's
// hostname is its name. It needs get on that Lease and on pods in ns.
func findLeader(ctx context.Context, cs kubernetes.Interface, ns, name string) (*leader, error) {
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no Lease %s/%s: no ome-scheduler leads in namespace %s (pass --scheduler-namespace and --scheduler-name, the release's namespace and scheduler.name; a scheduler run with leaderElect: false keeps no Lease: port-forward to it and pass --scheduler-url)", ns, name, ns)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("cannot read the leader's Lease %s/%s: %w (kubectl ome needs get on leases, get on pods and create on pods/portforward in namespace %s)", ns, name, err, ns)
	case err != nil:
		return nil, fmt.Errorf("get Lease %s/%s: %w", ns, name, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return nil, fmt.Errorf("the Lease %s/%s has no holder: no replica leads right now (a failover takes up to the lease duration, 15s by default)", ns, name)
	}
	podName, _, _ := strings.Cut(holder, "_")
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the Lease %s/%s is held by %q, but pod %s/%s does not exist (the leader's pod is gone; a standby takes the Lease within the lease duration, 15s by default: try again)", ns, name, holder, ns, podName)
	case err != nil:
		return nil, fmt.Errorf("get the leader's pod %s/%s (holder of the Lease %s/%s): %w", ns, podName, ns, name, err)
	}
	if pod.Status.Phase != v1.PodRunning || pod.DeletionTimestamp != nil {
		state := string(pod.Status.Phase)
		if pod.DeletionTimestamp != nil {
			state = "Terminating"
		}
		return nil, fmt.Errorf("the leader's pod %s/%s (holder of the Lease %s/%s) is %s, not Running", ns, podName, ns, name, state)
	}
	port, selfSigned := securePort(pod)
	return &leader{pod: pod, port: port, selfSigned: selfSigned}, nil
}

// securePort returns the scheduler's secure port in the pod: the container port named
// https-metrics (the chart's), else its --secure-port argument, else 10259; and whether it
// serves a self-signed certificate (neither --tls-cert-file nor --cert-dir).
func securePort(pod *v1.Pod) (int, bool) {
	port, flagPort, selfSigned := 0, 0, true
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == securePortName && port == 0 {
				port = int(p.ContainerPort)
			}
		}
		for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
			if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					flagPort = n
				}
			}
			if strings.HasPrefix(a, "--tls-cert-file") || strings.HasPrefix(a, "--cert-dir") {
				selfSigned = false
			}
		}
	}
	switch {
	case port > 0:
		return port, selfSigned
	case flagPort > 0:
		return flagPort, selfSigned
	}
	return DefaultSecurePort, selfSigned
}
