package devenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The release the chart is rendered as by default: the name and namespace the chart's README
// installs, and the Kubernetes version the chart requires.
const (
	ChartRelease     = "ome-scheduler"
	ChartNamespace   = "ome"
	ChartKubeVersion = "1.35.0"
)

// HelmBin returns the helm binary: $HELM if set, else helm in the tool binaries' directory.
func HelmBin() (string, error) {
	p := os.Getenv("HELM")
	if p == "" {
		return Bin("helm")
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("helm not found at $HELM (%s)", p)
	}
	return p, nil
}

// HelmError is a helm run that failed: its arguments, its exit error and its standard error.
type HelmError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *HelmError) Error() string {
	return fmt.Sprintf("helm %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

func (e *HelmError) Unwrap() error { return e.Err }

// Helm runs helm (HelmBin) with args and returns its standard output; a failed run returns a
// *HelmError. helm runs with a configuration, cache and data home of its own, removed
// afterwards, and without a kubeconfig, so no user configuration or cluster reaches it.
func Helm(ctx context.Context, args ...string) ([]byte, error) {
	helm, err := HelmBin()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "devenv-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &HelmError{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// HelmRender is one `helm template` of the chart. Empty fields take the defaults:
// ChartRelease, ChartDir(), ChartNamespace and ChartKubeVersion.
type HelmRender struct {
	Release     string
	Chart       string // a chart directory or packaged archive
	Namespace   string
	KubeVersion string
	Args        []string // further helm arguments: --set, -f, --show-only, …
}

// HelmTemplate runs `helm template <release> <chart> --kube-version <version> --namespace
// <namespace> <args…>` through Helm and returns the rendered manifests.
func HelmTemplate(ctx context.Context, r HelmRender) ([]byte, error) {
	if r.Chart == "" {
		dir, err := ChartDir()
		if err != nil {
			return nil, err
		}
		r.Chart = dir
	}
	args := []string{"template", or(r.Release, ChartRelease), r.Chart,
		"--kube-version", or(r.KubeVersion, ChartKubeVersion), "--namespace", or(r.Namespace, ChartNamespace)}
	return Helm(ctx, append(args, r.Args...)...)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
