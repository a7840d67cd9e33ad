package devenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

var (
	chartOnce   sync.Once
	chartConfig []byte
	chartErr    error
)

// ChartSchedulerConfig returns the KubeSchedulerConfiguration that charts/ome-scheduler
// renders with its default values (data key config.yaml of its ConfigMap), as rendered by
// HelmTemplate with the defaults (release ome-scheduler in namespace ome). helm runs once per
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
	out, err := HelmTemplate(context.Background(), HelmRender{})
	if err != nil {
		return nil, err
	}
	return configFromManifests(out)
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
