package integration

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// The placement labels OMEGangPack puts on every Binding, as the API server stores them on
// the pod (docs/reference.md, "Placement labels").

const wellKnownRack = "topology.kubernetes.io/rack"

var labelKeys = []string{domainKey, wellKnownRack, gangpack.DomainLabel, gangpack.GroupDomainLabel}

// placementLabelsOf returns the pod's placement labels (only those).
func placementLabelsOf(p *v1.Pod) map[string]string {
	out := map[string]string{}
	for _, k := range labelKeys {
		if v, ok := p.Labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// bindEvent is what a pod watch saw of one pod: its placement labels and annotations in the
// first event that shows spec.nodeName (the binding's own write), and the placement labels any
// update before that event showed (the nomination's PATCH comes before the binding).
type bindEvent struct {
	labels, annotations, before map[string]string
}

// watchBinds watches the namespace's pods. The function it returns waits (up to 10s) until the
// watch has delivered the binding of every named pod (a Get can see a binding before the
// watch delivers it), stops the watch and returns each pod's bindEvent.
func (e *env) watchBinds() func(names ...string) map[string]bindEvent {
	e.t.Helper()
	w, err := e.cp.Client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("watch pods: %v", err)
	}
	var mu sync.Mutex
	got, before := map[string]bindEvent{}, map[string]map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			mu.Lock()
			if _, seen := got[p.Name]; !seen {
				if p.Spec.NodeName == "" {
					if l := placementLabelsOf(p); len(l) > 0 {
						before[p.Name] = l
					}
				} else {
					got[p.Name] = bindEvent{labels: placementLabelsOf(p), annotations: placementAnnotations(p), before: before[p.Name]}
				}
			}
			mu.Unlock()
		}
	}()
	seen := func(names []string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			if _, ok := got[n]; !ok {
				return false
			}
		}
		return true
	}
	return func(names ...string) map[string]bindEvent {
		e.t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !seen(names) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		w.Stop()
		<-done
		for _, n := range names {
			if _, ok := got[n]; !ok {
				e.t.Errorf("the pod watch never delivered %s's binding", n)
			}
		}
		return got
	}
}

// The write that binds a pod carries its placement labels, no other write does, and a label
// the pod carries already is kept.
func TestPlacementLabels(t *testing.T) {
	e := newEnv(t)
	rack := map[string]string{wellKnownRack: "r7"}
	e.domain("c4", 4, 1, map[string]string{wellKnownRack: "r4"})
	e.domain("c2", 2, 1, rack)
	writes := e.watchBinds()
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, false)
	e.pod(devenv.PodSpec{Name: "own", GPUs: 1, Labels: map[string]string{wellKnownRack: "mine"}})
	got := e.bound(30*time.Second, append(pods, "own")...)
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got["solo"] = e.bound(30*time.Second, "solo")["solo"]
	first := writes(append(pods, "own", "solo")...)
	for _, p := range pods {
		want := map[string]string{domainKey: "c2", wellKnownRack: "r7", gangpack.DomainLabel: "c2"}
		if b := first[p]; !maps.Equal(b.labels, want) || b.before != nil {
			t.Errorf("pod %s: the write that bound it carried %v (earlier updates: %v), want %v (none earlier)", p, b.labels, b.before, want)
		}
	}
	if b := first["own"]; b.labels[wellKnownRack] != "mine" {
		t.Errorf("own: bound with %v, want its own %s=mine kept", b.labels, wellKnownRack)
	}
	want := map[string]string{}
	if r := e.labelOf(got["solo"], wellKnownRack); r != "" {
		want[wellKnownRack] = r
	}
	if b := first["solo"]; !maps.Equal(b.labels, want) || b.before != nil {
		t.Errorf("solo on %s: the write that bound it carried %v (earlier updates: %v), want %v (none earlier)", got["solo"], b.labels, b.before, want)
	}
	// The recipe "kubectl get pods -l ome.io/domain=…" (docs/reference.md section 7.1).
	sel, err := e.cp.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: gangpack.DomainLabel + "=c2"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range sel.Items {
		names = append(names, p.Name)
	}
	if slices.Sort(names); !slices.Equal(names, pods) {
		t.Errorf("pods selected by %s=c2: %v, want %v", gangpack.DomainLabel, names, pods)
	}
	waitMetric(t, "ome_scheduler_placement_labels_applied", nil, 1, 10*time.Second)
	if v := metric(t, "ome_scheduler_placement_labels_skipped_total", map[string]string{"key": wellKnownRack}); v < 1 {
		t.Errorf("placement_labels_skipped_total{key=%s} = %v, want ≥ 1", wellKnownRack, v)
	}
}

// An API server without PodTopologyLabelsAdmission drops the Binding's labels: pods bind
// without them and the gauge says so.
func TestPlacementLabelsDropped(t *testing.T) {
	plane, err := devenv.Start(devenv.Options{FeatureGates: "PodTopologyLabelsAdmission=false"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop) // runs after the env's cleanup: the scheduler stops first
	e := newEnvOn(t, plane)
	e.domain("c2", 2, 1, map[string]string{wellKnownRack: "r7"})
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, false)
	e.bound(30*time.Second, pods...)
	for _, name := range pods {
		p, err := plane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l := placementLabelsOf(p); len(l) != 0 {
			t.Errorf("pod %s carries %v, want no placement labels with the gate off", name, l)
		}
		if p.Annotations[gangpack.DomainAnnotation] != "c2" {
			t.Errorf("pod %s annotations %v, want the domain annotation kept", name, p.Annotations)
		}
	}
	waitMetric(t, "ome_scheduler_placement_labels_applied", nil, 0, 10*time.Second)
}
