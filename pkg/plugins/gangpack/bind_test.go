package gangpack

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
)

// Bind: the Binding of a gang member carries the placement annotations (labels_test.go: the
// placement labels of every pod), and a failed binding returns DefaultBinder's status.

// useNodeLister gives the plugin a node lister over the world's nodes (New wires the
// scheduler's node informer) and returns the lister's store.
func (w *world) useNodeLister() cache.Indexer {
	w.t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range w.nodes {
		if err := idx.Add(n); err != nil {
			w.t.Fatal(err)
		}
	}
	w.pl.nodes = corelisters.NewNodeLister(idx)
	return idx
}

// placeAll runs every pod's cycle up to Permit on the first free candidate, as scheduleOne
// does, and returns each pod's cycle state and node.
func (w *world) placeAll(pods []*v1.Pod) (map[string]fwk.CycleState, map[string]string) {
	w.t.Helper()
	states, nodeOf := map[string]fwk.CycleState{}, map[string]string{}
	used, placed := map[string]bool{}, []*v1.Pod{}
	for _, p := range pods {
		c := w.mustPin(p)
		cands := c.res.NodeNames.UnsortedList()
		sort.Strings(cands)
		i := slices.IndexFunc(cands, func(n string) bool { return !used[n] })
		if i < 0 {
			w.t.Fatalf("no free candidate for %s in %v", p.Name, cands)
		}
		n := cands[i]
		c.reserveOn(n)
		used[n] = true
		placed = append(placed, assumed(p, n))
		w.resnap(placed...)
		states[p.Name], nodeOf[p.Name] = c.cs, n
	}
	return states, nodeOf
}

// bindings returns the Bindings the fake clientset received, by pod name.
func bindings(t testing.TB, c *fake.Clientset) map[string]*v1.Binding {
	t.Helper()
	out := map[string]*v1.Binding{}
	for _, a := range c.Actions() {
		if a.GetVerb() != "create" || a.GetSubresource() != "binding" {
			continue
		}
		b := a.(clienttesting.CreateAction).GetObject().(*v1.Binding)
		out[b.Name] = b
	}
	return out
}

// bindAll adds the pods to the fake clientset (a binding needs its pod) and binds each.
func (w *world) bindAll(pods []*v1.Pod, states map[string]fwk.CycleState, nodeOf map[string]string) map[string]*v1.Binding {
	w.t.Helper()
	c := w.h.client.(*fake.Clientset)
	for _, p := range pods {
		if err := c.Tracker().Add(p); err != nil {
			w.t.Fatal(err)
		}
		if st := w.pl.Bind(w.ctx, states[p.Name], p, nodeOf[p.Name]); !st.IsSuccess() {
			w.t.Fatalf("Bind(%s) = %v, want success", p.Name, st)
		}
	}
	return bindings(w.t, c)
}

func TestBindAnnotatesGangMembers(t *testing.T) {
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1), testNode("b-0", "b", 1)}
	pods := members("g", 2)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 2))
	w.useNodeLister()
	states, nodeOf := w.placeAll(pods)
	got := w.bindAll(pods, states, nodeOf)
	for _, p := range pods {
		b := got[p.Name]
		if b == nil {
			t.Fatalf("no Binding for %s", p.Name)
		}
		if b.Namespace != p.Namespace || b.UID != p.UID || b.Target.Kind != "Node" || b.Target.Name != nodeOf[p.Name] {
			t.Errorf("Binding of %s = %s/%s uid %s to %s %s; want %s/%s uid %s to Node %s", p.Name, b.Namespace, b.Name,
				b.UID, b.Target.Kind, b.Target.Name, p.Namespace, p.Name, p.UID, nodeOf[p.Name])
		}
		want := map[string]string{DomainAnnotation: "a", DomainKeyAnnotation: testKey}
		if !maps.Equal(b.Annotations, want) {
			t.Errorf("Binding of %s annotations = %v, want %v", p.Name, b.Annotations, want)
		}
	}
}

// Without the node in the node informer (deleted meanwhile), the domain is the one the pin
// recorded.
func TestBindFallsBackToThePinnedDomain(t *testing.T) {
	nodes := []*v1.Node{testNode("a-0", "a", 1), testNode("a-1", "a", 1)}
	pods := members("g", 2)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 2))
	w.pl.nodes = corelisters.NewNodeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	states, nodeOf := w.placeAll(pods)
	for name, b := range w.bindAll(pods, states, nodeOf) {
		if b.Annotations[DomainAnnotation] != "a" || b.Annotations[DomainKeyAnnotation] != testKey {
			t.Errorf("Binding of %s annotations = %v, want domain a of %s", name, b.Annotations, testKey)
		}
	}
}

// bindPartnerGroup places and binds a placement group of two partners of 2 members (group key
// zone, gang key clique) and returns its members, their Bindings and nodes.
func bindPartnerGroup(t *testing.T) ([]*v1.Pod, map[string]*v1.Binding, map[string]string) {
	t.Helper()
	nodes := slices.Concat(cliqueNodes("c1", "z1", 2), cliqueNodes("c2", "z2", 2), cliqueNodes("c3", "z2", 2))
	a, b := members("a", 2), members("b", 2)
	pods := slices.Concat(a, b)
	w := newWorld(t, groupArgs(), nodes, pods,
		partnerPG("a", 2, "grp", "2", testZoneKey), partnerPG("b", 2, "grp", "2", testZoneKey))
	w.useNodeLister()
	states, nodeOf := w.placeAll(pods)
	return pods, w.bindAll(pods, states, nodeOf), nodeOf
}

// Partners with group key zone, gang key clique: every member carries its clique and the
// group's zone.
func TestBindAnnotatesPartnerGroupDomain(t *testing.T) {
	pods, got, nodeOf := bindPartnerGroup(t)
	for _, p := range pods {
		clique := nodeOf[p.Name][:2]
		want := map[string]string{DomainAnnotation: clique, DomainKeyAnnotation: testKey,
			GroupDomainAnnotation: "z2", GroupDomainKeyAnnotation: testZoneKey}
		if ann := got[p.Name].Annotations; !maps.Equal(ann, want) {
			t.Errorf("Binding of %s annotations = %v, want %v", p.Name, ann, want)
		}
	}
	if got["a-0"].Annotations[DomainAnnotation] == got["b-0"].Annotations[DomainAnnotation] {
		t.Errorf("both partners annotated with clique %s; want c2 and c3", got["a-0"].Annotations[DomainAnnotation])
	}
}

// A failed binding returns what DefaultBinder returns for the same error.
func TestBindErrorIsDefaultBinders(t *testing.T) {
	nodes := []*v1.Node{testNode("a-0", "a", 1)}
	pods := members("g", 1)
	w := newWorld(t, nil, nodes, pods, podGroup("g", 1))
	w.useNodeLister()
	states, nodeOf := w.placeAll(pods)
	bindErr := apierrors.NewConflict(v1.Resource("pods/binding"), "g-0", errors.New("pod g-0 is already assigned to node \"x\""))
	c := w.h.client.(*fake.Clientset)
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "binding", nil, bindErr
	})
	got := w.pl.Bind(w.ctx, states["g-0"], pods[0], nodeOf["g-0"])
	db, err := defaultbinder.New(w.ctx, nil, w.h)
	if err != nil {
		t.Fatal(err)
	}
	want := db.(fwk.BindPlugin).Bind(w.ctx, states["g-0"], pods[0], nodeOf["g-0"])
	if got.Code() != fwk.Error || got.Code() != want.Code() || got.Message() != want.Message() || !errors.Is(got.AsError(), bindErr) {
		t.Fatalf("Bind = %v (%v), want DefaultBinder's %v (%v)", got, got.AsError(), want, want.AsError())
	}
	calls := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "binding" {
			calls++
		}
	}
	if calls != 2 {
		t.Fatalf("%d binding calls, want 2 (OMEGangPack's and DefaultBinder's)", calls)
	}
}
