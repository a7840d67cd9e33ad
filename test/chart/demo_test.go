package chart_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// ---------------------------------------------------------------------------------------
// Demo manifests (manifests/demo: namespace, PodGroup and the gang's Deployment)

func TestDemoManifests(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "manifests", "demo")
	// The expected documents are testdata/demo/<file>.
	for _, file := range []string{"namespace.yaml", "podgroup.yaml", "gang.yaml"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := yaml.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			wantYAML(t, file, got, fixture(t, "demo/"+file))
		})
	}
}
