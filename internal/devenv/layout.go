package devenv

import (
	"context"
	"flag"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Clique is one nvidia.com/gpu.clique domain of 1-GPU nodes in a zone.
type Clique struct {
	Name, Zone string
	Nodes      []string
}

// DemoLayout is the demo's reference layout (clique-a: 2 nodes in zone-a, clique-b: 3 nodes
// in zone-b) plus a larger clique-c in zone-a, so best fit has a real choice: 9 one-GPU nodes.
var DemoLayout = []Clique{
	{"clique-a", "zone-a", []string{"gpu-node-1", "gpu-node-2"}},
	{"clique-b", "zone-b", []string{"gpu-node-3", "gpu-node-4", "gpu-node-5"}},
	{"clique-c", "zone-a", []string{"gpu-node-6", "gpu-node-7", "gpu-node-8", "gpu-node-9"}},
}

// CreateLayout creates the nodes of a layout, Ready with one GPU each.
func CreateLayout(ctx context.Context, c kubernetes.Interface, layout []Clique) error {
	_, err := createLayout(ctx, c, layout, false)
	return err
}

// CreateLayout creates the nodes of a layout with one GPU each: for kwok when the control
// plane runs it (then it waits until kwok has made them Ready), else Ready at once.
func (cp *ControlPlane) CreateLayout(ctx context.Context, layout []Clique) error {
	names, err := createLayout(ctx, cp.Client, layout, cp.Kwok != nil)
	if err != nil || cp.Kwok == nil {
		return err
	}
	return WaitNodesReady(ctx, cp.Client, time.Minute, names...)
}

// LayoutNodes returns the names of a layout's nodes.
func LayoutNodes(layout []Clique) []string {
	var names []string
	for _, d := range layout {
		names = append(names, d.Nodes...)
	}
	return names
}

func createLayout(ctx context.Context, c kubernetes.Interface, layout []Clique, kwok bool) ([]string, error) {
	var names []string
	for _, d := range layout {
		for _, n := range d.Nodes {
			s := NodeSpec{Name: n, GPUs: 1, Labels: map[string]string{CliqueKey: d.Name, ZoneKey: d.Zone}, Kwok: kwok}
			if _, err := CreateNode(ctx, c, s); err != nil {
				return nil, err
			}
			names = append(names, n)
		}
	}
	return names, nil
}

// QuietKlog sets klog up for a test binary: verbosity from $OME_TEST_V (default 0), and no
// output at all unless $OME_TEST_LOGS is set (the in-process scheduler logs a lot).
func QuietKlog() {
	fs := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(fs)
	v := os.Getenv("OME_TEST_V")
	if v == "" {
		v = "0"
	}
	_ = fs.Set("v", v)
	if os.Getenv("OME_TEST_LOGS") == "" {
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
}
