package chart_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// exampleExpectations are the settings each file of charts/ome-scheduler/examples must carry
// into the render: the OMEGangPack arguments topologyKey and allowedTopologyKeys, the
// Deployment's replicas and the container's resources (YAML snippets; "" = absent).
var exampleExpectations = map[string]struct {
	topologyKey, allowedTopologyKeys string
	leaderElect                      bool
	replicas, resources              string
	priorityClassName                string
	pdb                              bool
}{
	"nvl72.yaml": {
		topologyKey:         "nvidia.com/gpu.clique",
		allowedTopologyKeys: "[nvidia.com/gpu.clique]",
		leaderElect:         true,
		replicas:            "2",
		resources:           "{requests: {cpu: 200m, memory: 512Mi}, limits: {memory: 4Gi}}",
		priorityClassName:   "system-cluster-critical",
		pdb:                 true,
	},
	"hgx-racks-zones.yaml": {
		topologyKey:         "example.com/rack",
		allowedTopologyKeys: "[example.com/rack, topology.kubernetes.io/zone]",
		leaderElect:         true,
		replicas:            "2",
		resources:           "{requests: {cpu: 200m, memory: 512Mi}, limits: {memory: 4Gi}}",
		priorityClassName:   "system-cluster-critical",
		pdb:                 true,
	},
	"dev-one-node.yaml": {
		topologyKey:       "kubernetes.io/hostname",
		leaderElect:       true,
		replicas:          "1",
		resources:         "{requests: {cpu: 50m, memory: 128Mi}, limits: {memory: 1Gi}}",
		priorityClassName: "",
		pdb:               false,
	},
}

// Every example values file renders with helm template (which validates it against the
// schema) and its key settings land in the scheduler configuration and the Deployment.
func TestExampleValues(t *testing.T) {
	dir := filepath.Join(chartDir(t), "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	sort.Strings(names)
	var want []string
	for n := range exampleExpectations {
		want = append(want, n)
	}
	sort.Strings(want)
	wantEq(t, "files in charts/ome-scheduler/examples", strings.Join(names, " "), strings.Join(want, " "))

	for name, exp := range exampleExpectations {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, name)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "# Example values: ") {
				t.Errorf("%s does not open with a '# Example values: <cluster>' header comment", name)
			}
			res := helmTemplate(t, devenv.HelmRender{Args: []string{"-f", path}})
			if res.err != nil {
				t.Fatalf("helm template -f %s: %v\n%s", name, res.err, res.stderr)
			}
			r := parseRender(t, res.stdout)

			cfg := fromYAML(t, configYAML(t, r, "ome-scheduler"))
			wantEq(t, "leaderElection.leaderElect", dig(cfg, "leaderElection", "leaderElect"), exp.leaderElect)
			var args any
			pcs, _ := dig(cfg, "profiles", 0, "pluginConfig").([]any)
			for _, pc := range pcs {
				if dig(pc, "name") == "OMEGangPack" {
					args = dig(pc, "args")
				}
			}
			if args == nil {
				t.Fatalf("no OMEGangPack pluginConfig in the configuration")
			}
			wantEq(t, "OMEGangPack topologyKey", dig(args, "topologyKey"), exp.topologyKey)
			if exp.allowedTopologyKeys == "" {
				if has(args, "allowedTopologyKeys") {
					t.Errorf("allowedTopologyKeys rendered: %v", dig(args, "allowedTopologyKeys"))
				}
			} else {
				wantYAML(t, "OMEGangPack allowedTopologyKeys", dig(args, "allowedTopologyKeys"), exp.allowedTopologyKeys)
			}

			d := r.get(t, "Deployment", "ome-scheduler")
			wantYAML(t, "Deployment replicas", dig(d.obj, "spec", "replicas"), exp.replicas)
			ps := dig(d.obj, "spec", "template", "spec")
			wantYAML(t, "container resources", dig(ps, "containers", 0, "resources"), exp.resources)
			if exp.priorityClassName == "" {
				if has(ps, "priorityClassName") {
					t.Errorf("priorityClassName rendered: %v", dig(ps, "priorityClassName"))
				}
			} else {
				wantEq(t, "priorityClassName", dig(ps, "priorityClassName"), exp.priorityClassName)
			}
			_, pdb := r.find("PodDisruptionBudget", "ome-scheduler")
			wantEq(t, "PodDisruptionBudget rendered", pdb, exp.pdb)
		})
	}
}
