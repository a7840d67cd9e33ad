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

	"github.com/moirai-internal/ome-scheduler/test/testenv"
)

// The shipped spread example (manifests/examples/spread/instances.yaml) places each Instance
// inside one clique and the two Instances' leaders in different zones.
func TestSpreadExampleManifest(t *testing.T) {
	e := newEnv(t)
	e.cliques(map[string]string{"c1": "zone-a", "c2": "zone-a", "c3": "zone-b"})
	e.startScheduler(testenv.Profile{})
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "spread", "instances.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string][]string{}
	var leaders []string
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
			g := p.Labels[testenv.PodGroupLabel]
			instances[g] = append(instances[g], p.Name)
			if strings.HasSuffix(p.Name, "-leader") {
				leaders = append(leaders, p.Name)
			}
		default:
			t.Fatalf("unexpected kind %q in the example", meta.Kind)
		}
	}
	if len(instances) != 2 || len(leaders) != 2 {
		t.Fatalf("example has %d Instances and %d leaders, want 2 and 2", len(instances), len(leaders))
	}
	placed := map[string]string{}
	for _, pods := range instances {
		got := e.bound(30*time.Second, pods...)
		e.oneDomain(got, testenv.CliqueKey)
		for k, v := range got {
			placed[k] = v
		}
	}
	if z0, z1 := e.labelOf(placed[leaders[0]], testenv.ZoneKey), e.labelOf(placed[leaders[1]], testenv.ZoneKey); z0 == z1 {
		t.Fatalf("both leaders in zone %s", z0)
	}
}
