package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// openSchemaObjects are the schema objects that deliberately accept keys they do not name:
// maps whose keys are the user's (labels, annotations, nodeSelector, resource quantities) and
// Kubernetes or Prometheus Operator objects rendered verbatim. Paths use "." between
// properties and "[]" for array items. Every other object must set additionalProperties.
var openSchemaObjects = map[string]bool{
	"scheduler.affinity.nodeAffinity":                      true,
	"scheduler.affinity.podAffinity":                       true,
	"scheduler.affinity.podAntiAffinity":                   true,
	"scheduler.resources.claims[]":                         true,
	"scheduler.metrics.serviceMonitor.tlsConfig":           true,
	"scheduler.metrics.serviceMonitor.relabelings[]":       true,
	"scheduler.metrics.serviceMonitor.metricRelabelings[]": true,
}

// chartSchema is values.schema.json decoded, with "#/definitions/..." references resolved
// on demand.
type chartSchema struct {
	root map[string]any
}

func loadChartSchema(t *testing.T) chartSchema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return chartSchema{root: root}
}

// resolve follows a "#/definitions/<name>" reference.
func (s chartSchema) resolve(t *testing.T, node map[string]any) map[string]any {
	t.Helper()
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if !ok {
			t.Fatalf("unsupported $ref %q", ref)
		}
		def, ok := s.root["definitions"].(map[string]any)[name].(map[string]any)
		if !ok {
			t.Fatalf("$ref %q names no definition", ref)
		}
		node = def
	}
}

// child returns the schema of key k inside object schema node: a property, a matching
// patternProperties entry or an additionalProperties schema. why says what is missing.
func (s chartSchema) child(t *testing.T, node map[string]any, k string) (map[string]any, string) {
	t.Helper()
	if props, ok := node["properties"].(map[string]any); ok {
		if c, ok := props[k].(map[string]any); ok {
			return s.resolve(t, c), ""
		}
	}
	if pats, ok := node["patternProperties"].(map[string]any); ok {
		for p, c := range pats {
			if regexp.MustCompile(p).MatchString(k) {
				return s.resolve(t, c.(map[string]any)), ""
			}
		}
	}
	switch ap := node["additionalProperties"].(type) {
	case map[string]any:
		return s.resolve(t, ap), ""
	case bool:
		if !ap {
			return nil, "rejected by the schema (additionalProperties: false)"
		}
	}
	return nil, "no schema entry"
}

// walkValues checks that every key path of v (values.yaml) has a schema entry that
// constrains it.
func (s chartSchema) walkValues(t *testing.T, path string, v any, node map[string]any, missing *[]string) {
	t.Helper()
	if len(node) == 0 {
		*missing = append(*missing, path+": empty schema")
		return
	}
	if openSchemaObjects[path] {
		return // its keys are the user's
	}
	switch val := v.(type) {
	case map[string]any:
		for k, c := range val {
			p := k
			if path != "" {
				p = path + "." + k
			}
			cs, why := s.child(t, node, k)
			if cs == nil {
				*missing = append(*missing, p+": "+why)
				continue
			}
			s.walkValues(t, p, c, cs, missing)
		}
	case []any:
		items, ok := node["items"].(map[string]any)
		if !ok {
			*missing = append(*missing, path+": array without an items schema")
			return
		}
		items = s.resolve(t, items)
		for _, c := range val {
			s.walkValues(t, path+"[]", c, items, missing)
		}
	}
}

// openObjects lists schema objects (by path) that neither set additionalProperties nor
// are listed in openSchemaObjects.
func (s chartSchema) openObjects(t *testing.T, path string, node map[string]any, out *[]string) {
	t.Helper()
	node = s.resolve(t, node)
	isObject := node["type"] == "object" || node["properties"] != nil || node["patternProperties"] != nil
	if isObject {
		if _, set := node["additionalProperties"]; !set && !openSchemaObjects[path] {
			*out = append(*out, path)
		}
	}
	if props, ok := node["properties"].(map[string]any); ok {
		for k, c := range props {
			p := k
			if path != "" {
				p = path + "." + k
			}
			s.openObjects(t, p, c.(map[string]any), out)
		}
	}
	if ap, ok := node["additionalProperties"].(map[string]any); ok {
		s.openObjects(t, path+".*", ap, out)
	}
	if pats, ok := node["patternProperties"].(map[string]any); ok {
		for _, c := range pats {
			s.openObjects(t, path+".*", c.(map[string]any), out)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		s.openObjects(t, path+"[]", items, out)
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := node[kw].([]any); ok {
			for _, a := range alts {
				s.openObjects(t, path, a.(map[string]any), out)
			}
		}
	}
}

// TestSchemaCoversEveryValue walks values.yaml: every key path needs a schema entry, and
// every object of the schema rejects unknown keys unless it is a deliberately open map.
func TestSchemaCoversEveryValue(t *testing.T) {
	vals := chartValues(t)
	s := loadChartSchema(t)

	t.Run("every value has a schema entry", func(t *testing.T) {
		var missing []string
		s.walkValues(t, "", vals, s.root, &missing)
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("values.yaml %s", m)
		}
	})
	t.Run("every object rejects unknown keys", func(t *testing.T) {
		var open []string
		s.openObjects(t, "", s.root, &open)
		sort.Strings(open)
		for _, p := range open {
			t.Errorf("schema object %q has no additionalProperties (false, or a schema for an open map)", p)
		}
	})
}

// TestSchemaRejectsMisspelledKeys: a misspelled key in a values file fails the render with
// Helm's schema error instead of being ignored.
func TestSchemaRejectsMisspelledKeys(t *testing.T) {
	const schemaErr = "values don't meet the specifications of the schema"
	cases := []struct {
		name, values, at, key string
	}{
		{"scheduler.replicaCont", "scheduler:\n  replicaCont: 2\n", "/scheduler", "replicaCont"},
		{"scheduler.plugins (plural)", "scheduler:\n  plugins:\n    topologyKey: nvidia.com/gpu.clique\n", "/scheduler", "plugins"},
		{"top-level schedulr", "schedulr:\n  replicaCount: 1\n", "", "schedulr"},
		{"top-level enable (the condition switch is enabled)", "enable: true\n", "", "enable"},
		{"plugin.topologykey (case)", "scheduler:\n  plugin:\n    topologykey: nvidia.com/gpu.clique\n", "/scheduler/plugin", "topologykey"},
		{"serviceMonitor.enable", "scheduler:\n  metrics:\n    serviceMonitor:\n      enable: true\n", "/scheduler/metrics/serviceMonitor", "enable"},
		{"probes.liveness.periodSecond", "scheduler:\n  probes:\n    liveness:\n      periodSecond: 5\n", "/scheduler/probes/liveness", "periodSecond"},
		{"resources.request", "scheduler:\n  resources:\n    request:\n      memory: 1Gi\n", "/scheduler/resources", "request"},
		{"affinity.podAntiAfinity", "scheduler:\n  affinity:\n    podAntiAfinity: {}\n", "/scheduler/affinity", "podAntiAfinity"},
		{"networkPolicy namespaceSelector.matchLabel", "scheduler:\n  networkPolicy:\n    from:\n      - namespaceSelector:\n          matchLabel:\n            team: monitoring\n", "/scheduler/networkPolicy/from/0/namespaceSelector", "matchLabel"},
		{"tolerations[].efect", "scheduler:\n  tolerations:\n    - key: gpu\n      operator: Exists\n      efect: NoSchedule\n", "/scheduler/tolerations/0", "efect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(tc.values), 0o600); err != nil {
				t.Fatal(err)
			}
			res := template(t, "-f", f)
			if res.err == nil {
				t.Fatalf("render with\n%s succeeded; want a schema error", tc.values)
			}
			wantContains(t, "stderr", res.stderr, schemaErr)
			wantContains(t, "stderr", res.stderr, "- at '"+tc.at+"': additional properties '"+tc.key+"' not allowed")
		})
	}
}

// global is open for umbrella charts: keys a parent chart passes down to every dependency
// (global.imageRegistry, global.storageClass, ...) are accepted and ignored, while the typed
// ones are still checked; the root key enabled, which a parent's dependency condition reads,
// is accepted too.
func TestSchemaAcceptsParentGlobals(t *testing.T) {
	f := writeValues(t, "enabled: true\nglobal:\n  imageRegistry: registry.example.com\n  storageClass: fast-ssd\n  labels:\n    team: gpu\n")
	if res := template(t, "-f", f); res.err != nil {
		t.Fatalf("render with foreign global keys: %v\n%s", res.err, res.stderr)
	}
	res := template(t, "-f", f, "--set-json", `global.imagePullSecrets=[{"nme":"regcred"}]`)
	if res.err == nil {
		t.Fatal("global.imagePullSecrets item without name accepted")
	}
	wantContains(t, "stderr", res.stderr, "/global/imagePullSecrets/0")
}
