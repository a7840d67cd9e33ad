package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The shipped spread example (manifests/examples/spread/instances.yaml) places each Instance
// inside one clique and the two Instances' leaders in different zones.
func TestSpreadExampleManifest(t *testing.T) {
	e := newEnv(t)
	e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-a", "c3": "zone-b"})
	e.startScheduler(devenv.Profile{})
	instances := e.applyExample("spread", "instances.yaml")
	var leaders []string
	for _, pods := range instances {
		for _, p := range pods {
			if strings.HasSuffix(p, "-leader") {
				leaders = append(leaders, p)
			}
		}
	}
	if len(instances) != 2 || len(leaders) != 2 {
		t.Fatalf("example has %d Instances and %d leaders, want 2 and 2", len(instances), len(leaders))
	}
	placed := map[string]string{}
	for _, pods := range instances {
		got := e.bound(30*time.Second, pods...)
		e.oneDomain(got, devenv.CliqueKey)
		for k, v := range got {
			placed[k] = v
		}
	}
	if z0, z1 := e.labelOf(placed[leaders[0]], devenv.ZoneKey), e.labelOf(placed[leaders[1]], devenv.ZoneKey); z0 == z1 {
		t.Fatalf("both leaders in zone %s", z0)
	}
}

// applyExample creates the PodGroups and pods of a shipped example in the test's namespace
// and returns the pod names per PodGroup.
func (e *env) applyExample(dir, file string) map[string][]string {
	e.t.Helper()
	t := e.t
	root, err := devenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "manifests", "examples", dir, file))
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string][]string{}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "PodGroup":
			pg := &schedv1alpha1.PodGroup{}
			if err := yaml.UnmarshalStrict(doc, pg); err != nil {
				t.Fatal(err)
			}
			pg.Namespace = e.ns
			if _, err := e.cp.PodGroups.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "Pod":
			p := &v1.Pod{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				t.Fatal(err)
			}
			p.Namespace = e.ns
			if _, err := e.cp.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			g := p.Labels[devenv.PodGroupLabel]
			groups[g] = append(groups[g], p.Name)
		default:
			t.Fatalf("unexpected kind %q in the example", meta.Kind)
		}
	}
	return groups
}

// The shipped partner example (manifests/examples/partners/prefill-decode.yaml): the prefill
// and decode gangs each fill one clique, both cliques in one zone, although the only free
// clique of the other zone would take either gang alone first.
func TestPartnersExampleManifest(t *testing.T) {
	e := newEnv(t)
	e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-b", "c3": "zone-b"})
	e.startScheduler(devenv.Profile{})
	gangs := e.applyExample("partners", "prefill-decode.yaml")
	if len(gangs) != 2 {
		t.Fatalf("example has %d gangs, want 2", len(gangs))
	}
	var all []string
	for _, pods := range gangs {
		all = append(all, pods...)
	}
	got := e.bound(30*time.Second, all...)
	cliques := map[string]bool{}
	for _, pods := range gangs {
		one := map[string]string{}
		for _, p := range pods {
			one[p] = got[p]
		}
		cliques[e.oneDomain(one, devenv.CliqueKey)] = true
	}
	if len(cliques) != 2 {
		t.Fatalf("both gangs in one clique: %v", got)
	}
	if z := e.oneDomain(got, devenv.ZoneKey); z != "zone-b" {
		t.Fatalf("group in %s, want zone-b", z)
	}
}
