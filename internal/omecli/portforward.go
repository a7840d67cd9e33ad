package omecli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// tunnel is a port-forward from a random port on 127.0.0.1 to a pod's port, as
// `kubectl port-forward pod/NAME :PORT` opens it.
type tunnel struct {
	local  int
	stop   chan struct{}
	done   chan error
	errOut *syncBuffer
}

// Close ends the port-forward.
func (t *tunnel) Close() {
	close(t.stop)
	<-t.done
}

// errors returns what the port-forward reported about its connections (the pod refusing the
// port, for example), trimmed; "" when nothing.
func (t *tunnel) errors() string { return strings.TrimSpace(t.errOut.String()) }

// forward opens a port-forward to the pod's port through the API server's pods/portforward
// subresource, with the kubeconfig's credentials: over WebSocket, falling back to SPDY when the
// API server cannot upgrade to it, as kubectl 1.35 does (KUBECTL_PORT_FORWARD_WEBSOCKETS=false
// turns WebSocket off, as for kubectl).
func forward(ctx context.Context, cfg *rest.Config, pod *v1.Pod, port int) (*tunnel, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	if !strings.EqualFold(os.Getenv("KUBECTL_PORT_FORWARD_WEBSOCKETS"), "false") {
		ws, err := portforward.NewSPDYOverWebsocketDialer(url, cfg)
		if err != nil {
			return nil, err
		}
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	t := &tunnel{stop: make(chan struct{}), done: make(chan error, 1), errOut: &syncBuffer{}}
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, t.stop, ready, io.Discard, t.errOut)
	if err != nil {
		return nil, err
	}
	go func() { t.done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-t.done:
		return nil, fmt.Errorf("port-forward to pod %s/%s port %d: %w (it needs create on pods/portforward in namespace %s)", pod.Namespace, pod.Name, port, err, pod.Namespace)
	case <-ctx.Done():
		close(t.stop) // without waiting: a dial in progress does not see it
		return nil, fmt.Errorf("port-forward to pod %s/%s port %d: %w", pod.Namespace, pod.Name, port, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Close()
		return nil, fmt.Errorf("port-forward to pod %s/%s port %d: no local port (%v)", pod.Namespace, pod.Name, port, err)
	}
	t.local = int(ports[0].Local)
	return t, nil
}

// syncBuffer is a bytes.Buffer safe for the port-forward's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
