package devenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// The release the chart is rendered as: the name and namespace the chart's README installs.
const (
	chartRelease     = "ome-scheduler"
	chartNamespace   = "ome"
	chartKubeVersion = "1.35.0"
)

var (
	chartOnce   sync.Once
	chartConfig []byte
	chartErr    error
)

// ChartSchedulerConfig returns the KubeSchedulerConfiguration that charts/ome-scheduler
// renders with its default values (data key config.yaml of its ConfigMap), as rendered by
// `bin/helm template ome-scheduler charts/ome-scheduler --namespace ome`. helm runs once per
// process; the result is shared, so callers must not modify the returned slice.
func ChartSchedulerConfig() ([]byte, error) {
	chartOnce.Do(func() {
		chartConfig, chartErr = renderChartConfig()
		if chartErr != nil {
			chartErr = fmt.Errorf("render the scheduler configuration of charts/ome-scheduler: %w", chartErr)
		}
	})
	return chartConfig, chartErr
}

func renderChartConfig() ([]byte, error) {
	helm, err := Bin("helm")
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "devenv-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(helm, "template", chartRelease, filepath.Join(root, "charts", "ome-scheduler"),
		"--namespace", chartNamespace, "--kube-version", chartKubeVersion)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Keep helm away from any user configuration or cluster.
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s template: %w: %s", helm, err, strings.TrimSpace(stderr.String()))
	}
	return configFromManifests(stdout.Bytes())
}

// configFromManifests finds the ConfigMap carrying config.yaml among rendered manifests.
func configFromManifests(out []byte) ([]byte, error) {
	var found []byte
	for _, doc := range splitManifests(string(out)) {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			return nil, fmt.Errorf("parse rendered manifest: %w", err)
		}
		cfg, ok := cm.Data["config.yaml"]
		if cm.Kind != "ConfigMap" || !ok {
			continue
		}
		if found != nil {
			return nil, errors.New("more than one rendered ConfigMap holds config.yaml")
		}
		found = []byte(cfg)
	}
	if found == nil {
		return nil, errors.New("no rendered ConfigMap holds config.yaml")
	}
	return found, nil
}

// splitManifests splits a multi-document YAML stream at its "---" separator lines.
func splitManifests(s string) []string {
	var docs []string
	var cur strings.Builder
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			docs = append(docs, cur.String())
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimRight(line, " \r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}
