package gangpack

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// The placement labels on the Binding: node label values of the configured keys, the domain
// labels of gang members and partners, never a key the pod carries or one outside the list.

const testRack = "r1"

// rackedNode is testNode with a rack label.
func rackedNode(name, domain string) *v1.Node {
	n := testNode(name, domain, 1)
	n.Labels[gang.RackLabel] = testRack
	return n
}

// bindOne binds pod to node n1 in a cycle without a pin and returns its Binding.
func (w *world) bindOne(p *v1.Pod) *v1.Binding {
	w.t.Helper()
	c := w.h.client.(*fake.Clientset)
	if err := c.Tracker().Add(p); err != nil {
		w.t.Fatal(err)
	}
	if st := w.pl.Bind(w.ctx, framework.NewCycleState(), p, "n1"); !st.IsSuccess() {
		w.t.Fatalf("Bind(%s) = %v, want success", p.Name, st)
	}
	b := bindings(w.t, c)[p.Name]
	if b == nil {
		w.t.Fatalf("no Binding for %s", p.Name)
	}
	return b
}

func TestBindLabelsStandalonePod(t *testing.T) {
	w := newWorld(t, nil, []*v1.Node{rackedNode("n1", "a")}, nil)
	w.useNodeLister()
	p := standalone("solo")
	b := w.bindOne(p)
	want := map[string]string{testKey: "a", gang.RackLabel: testRack}
	if !maps.Equal(b.Labels, want) {
		t.Errorf("Binding labels = %v, want %v (hostname and other node labels are outside the list)", b.Labels, want)
	}
	if b.Annotations != nil || b.UID != p.UID || b.Target.Kind != "Node" || b.Target.Name != "n1" {
		t.Errorf("Binding = %+v, want DefaultBinder's (uid %s, Node n1, no annotations) plus labels", b, p.UID)
	}
}

func TestBindLabelsGangMembers(t *testing.T) {
	nodes := []*v1.Node{rackedNode("a-0", "a"), rackedNode("a-1", "a"), rackedNode("b-0", "b")}
	pods := members("g", 2)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 2))
	w.useNodeLister()
	states, nodeOf := w.placeAll(pods)
	got := w.bindAll(pods, states, nodeOf)
	want := map[string]string{testKey: "a", gang.RackLabel: testRack, DomainLabel: "a"}
	for _, p := range pods {
		if l := got[p.Name].Labels; !maps.Equal(l, want) {
			t.Errorf("Binding of %s labels = %v, want %v", p.Name, l, want)
		}
	}
}

func TestBindLabelsPartnerGroupDomain(t *testing.T) {
	pods, got, nodeOf := bindPartnerGroup(t)
	for _, p := range pods {
		clique := nodeOf[p.Name][:2]
		want := map[string]string{testKey: clique, DomainLabel: clique, GroupDomainLabel: "z2"}
		if l := got[p.Name].Labels; !maps.Equal(l, want) {
			t.Errorf("Binding of %s labels = %v, want %v", p.Name, l, want)
		}
	}
}

// A key the pod carries is not sent (the API server would overwrite it) and is counted.
func TestBindLabelsKeepThePodsOwn(t *testing.T) {
	metrics.Register()
	w := newWorld(t, nil, []*v1.Node{rackedNode("n1", "a")}, nil)
	w.useNodeLister()
	before, _ := testutil.GetCounterMetricValue(metrics.PlacementLabelsSkipped.WithLabelValues(testKey))
	p := standalone("solo")
	p.Labels = map[string]string{testKey: "mine"}
	b := w.bindOne(p)
	if want := map[string]string{gang.RackLabel: testRack}; !maps.Equal(b.Labels, want) {
		t.Errorf("Binding labels = %v, want %v", b.Labels, want)
	}
	after, _ := testutil.GetCounterMetricValue(metrics.PlacementLabelsSkipped.WithLabelValues(testKey))
	if after-before != 1 {
		t.Errorf("skipped{%s} rose by %v, want 1", testKey, after-before)
	}
}

// A configured list replaces the default; a value that is not a valid label value is left out.
func TestBindLabelsConfiguredListAndInvalidValues(t *testing.T) {
	args := testArgs()
	args.PlacementLabels = []string{"example.com/odd", "example.com/ok"}
	n := rackedNode("n1", "a")
	n.Labels["example.com/odd"] = "not a label value!"
	n.Labels["example.com/ok"] = "fine"
	w := newWorld(t, args, []*v1.Node{n}, nil)
	w.useNodeLister()
	b := w.bindOne(standalone("solo"))
	if want := map[string]string{"example.com/ok": "fine"}; !maps.Equal(b.Labels, want) {
		t.Errorf("Binding labels = %v, want %v", b.Labels, want)
	}
}

// With no label to write the Binding is DefaultBinder's, without labels.
func TestBindWithoutLabels(t *testing.T) {
	args := testArgs()
	args.PlacementLabels = []string{}
	w := newWorld(t, args, []*v1.Node{rackedNode("n1", "a")}, nil)
	w.useNodeLister()
	if b := w.bindOne(standalone("solo")); b.Labels != nil || b.Annotations != nil {
		t.Errorf("Binding metadata = %v / %v, want none", b.Labels, b.Annotations)
	}
}

func boundPod(uid string, labels map[string]string) *v1.Pod {
	p := standalone(uid)
	p.Spec.NodeName, p.Labels = "n1", labels
	return p
}

// The first update of a pod bound with labels that carries spec.nodeName decides, once.
func TestLabelCheck(t *testing.T) {
	sent := map[string]string{testKey: "a"}
	for _, tc := range []struct {
		name    string
		got     map[string]string
		applied bool
	}{
		{"applied", map[string]string{testKey: "a", "app": "x"}, true},
		{"dropped", map[string]string{"app": "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c labelCheck
			p := boundPod("p", tc.got)
			c.expect(p.UID, sent)
			unbound := standalone("p")
			if _, decided := c.observe(nil, unbound); decided {
				t.Fatal("decided on a pod without spec.nodeName")
			}
			if _, decided := c.observe(unbound, boundPod("other", nil)); decided {
				t.Fatal("decided on a pod bound without labels")
			}
			applied, decided := c.observe(unbound, p)
			if !decided || applied != tc.applied {
				t.Fatalf("observe = %v, %v; want %v, true", applied, decided, tc.applied)
			}
			c.expect("q", sent)
			if _, decided := c.observe(nil, boundPod("q", nil)); decided {
				t.Fatal("decided twice")
			}
		})
	}
}

// A dropped label sets the gauge to 0 and binding goes on.
func TestCheckLabelsSetsTheGauge(t *testing.T) {
	metrics.Register()
	w := newWorld(t, nil, []*v1.Node{rackedNode("n1", "a")}, nil)
	w.useNodeLister()
	p := standalone("solo")
	b := w.bindOne(p)
	bound := p.DeepCopy()
	bound.Spec.NodeName = b.Target.Name
	w.pl.checkLabels(p, bound)
	t.Cleanup(func() { metrics.PlacementLabelsApplied.Set(1) })
	if v, _ := testutil.GetGaugeMetricValue(metrics.PlacementLabelsApplied); v != 0 {
		t.Fatalf("placement_labels_applied = %v, want 0", v)
	}
	if st := w.pl.Bind(w.ctx, framework.NewCycleState(), standalone("next"), "n1"); st.Code() == fwk.Skip {
		t.Fatalf("Bind after the check = %v, want a binding", st)
	}
}
