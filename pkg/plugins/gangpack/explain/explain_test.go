package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

const (
	gpu    = "nvidia.com/gpu"
	clique = "nvidia.com/gpu.clique"
)

func testArgs() *Args {
	return &Args{TopologyKey: clique, PodGroupTopologyKeyAnnotation: "ome.io/topology-key",
		DefaultPermitTimeoutSeconds: ptr.To[int64](60), GCIntervalSeconds: ptr.To[int64](30)}
}

func node(name, domain string, gpus int64) *v1.Node {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourcePods: resource.MustParse("110"),
		v1.ResourceName(gpu): *resource.NewQuantity(gpus, resource.DecimalSI)}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clique: domain, v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

func pod(ns, name, nodeName, group string, gpus int64) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: k8stypes.UID("uid-" + name), Labels: map[string]string{}},
		Spec: v1.PodSpec{NodeName: nodeName, SchedulerName: "ome-scheduler", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceName(gpu): *resource.NewQuantity(gpus, resource.DecimalSI)}}}}}}
	if group != "" {
		p.Labels[gang.Label] = group
	}
	return p
}

// Three cliques of two 4-GPU nodes: a has 8 free GPUs, b 5 (a bound gang of 3), c 2 (six
// standalone GPUs used).
func cluster() *Cluster {
	c := &Cluster{Args: testArgs()}
	for _, d := range []string{"a", "b", "c"} {
		c.Nodes = append(c.Nodes, node(d+"-1", d, 4), node(d+"-2", d, 4))
	}
	c.Pods = append(c.Pods, pod("t", "bound-0", "b-1", "bound", 1), pod("t", "bound-1", "b-1", "bound", 1), pod("t", "bound-2", "b-2", "bound", 1),
		pod("t", "solo-0", "c-1", "", 4), pod("t", "solo-1", "c-2", "", 2))
	return c
}

func whatif(n int, gpus int64) Shape {
	return Shape{Namespace: "t", MinMember: n, Requests: v1.ResourceList{v1.ResourceName(gpu): *resource.NewQuantity(gpus, resource.DecimalSI)}}
}

func TestWhatIfBestFit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shape  Shape
		chosen string
		reason string
	}{
		{"two fit c, the tightest", whatif(2, 1), "c", "best fit: c has the least room (2) of the 3 domains"},
		{"three fit b", whatif(3, 1), "b", "best fit: b has the least room (5)"},
		{"six fit only a", whatif(6, 1), "a", "of the 1 domains"},
		{"nine fit nowhere", whatif(9, 1), "", "no domain has room for gang t/kubectl-ome-whatif: the best domain a has room for 0 of 9 members"},
		{"apart: one per node", func() Shape { s := whatif(2, 1); s.AntiAffinityPerNode = true; return s }(), "a", "best fit: a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := WhatIf(cluster(), tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			if r.ChosenDomain != tc.chosen || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("chosen %q reason %q; want %q containing %q", r.ChosenDomain, r.Reason, tc.chosen, tc.reason)
			}
			if len(r.Domains) != 3 || r.ReservationsKnown {
				t.Fatalf("domains %+v, reservations known %v", r.Domains, r.ReservationsKnown)
			}
		})
	}
}

// A forming gang reserving b's room sends the gang to a, and b says who holds it.
func TestWhatIfReservations(t *testing.T) {
	c := cluster()
	c.Reservations = &Reservations{Leader: true, Pins: []Pin{{Gang: "u/forming", TopologyKey: clique, Domain: "b", Forming: true, Remaining: 2, MinMember: 2,
		Reserved: []ReservedSlot{{Node: "b-1", Members: 2, Each: map[string]int64{gpu: 1}}}}}}
	r, err := WhatIf(c, whatif(4, 1))
	if err != nil {
		t.Fatal(err)
	}
	if r.ChosenDomain != "a" || !r.ReservationsKnown {
		t.Fatalf("chosen %q, known %v; want a", r.ChosenDomain, r.ReservationsKnown)
	}
	b := r.Domains[1]
	if b.Name != "b" || b.Fits || b.Reserved != 2 || !strings.Contains(b.Reason, "u/forming reserves 2 members on 1 node of b") {
		t.Fatalf("domain b: %+v", b)
	}
	// Without a: every fitting domain is reserved, in the scheduler's words.
	c.Nodes = c.Nodes[2:]
	r, err = WhatIf(c, whatif(4, 1))
	if err != nil {
		t.Fatal(err)
	}
	if r.ChosenDomain != "" || !strings.HasSuffix(r.Reason, ": every fitting domain is reserved for a forming gang") {
		t.Fatalf("chosen %q reason %q", r.ChosenDomain, r.Reason)
	}
}

// An existing gang: its placed members' domain is adopted; a missing member is a wait.
func TestExplainPodGroup(t *testing.T) {
	c := cluster()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "bound", UID: "pg"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 4}}
	c.Pods = append(c.Pods, pod("t", "bound-3", "", "bound", 1))
	r, err := Explain(c, Request{PodGroup: pg})
	if err != nil {
		t.Fatal(err)
	}
	if r.ChosenDomain != "b" || r.Placed != 3 || r.Need != 1 || !strings.Contains(r.Reason, "placed members are in b") {
		t.Fatalf("%+v", r)
	}
	pg.Spec.MinMember = 6
	r, err = Explain(c, Request{PodGroup: pg})
	if err != nil {
		t.Fatal(err)
	}
	if r.ChosenDomain != "" || r.Reason != "waiting for all PodGroup member templates for t/bound: 1 of 3 members exist" || r.Domains[0].Reason != "not planned: the gang waits (see the reason below)" {
		t.Fatalf("%+v", r)
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "Chosen domain: <none>") || !strings.Contains(buf.String(), "reservations unknown") {
		t.Fatalf("table %q (%v)", buf.String(), err)
	}
}

func TestDomainsFragmentation(t *testing.T) {
	c := cluster()
	s := whatif(1, 2)
	r, err := Domains(c, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]DomainUse{
		"a": {Name: "a", Nodes: 2, Allocatable: 8, Free: 8, LargestGang: 4, Stranded: 0},
		"b": {Name: "b", Nodes: 2, Allocatable: 8, Free: 5, BoundGangs: 1, LargestGang: 2, Stranded: 1},
		"c": {Name: "c", Nodes: 2, Allocatable: 8, Free: 2, LargestGang: 1, Stranded: 0},
	}
	for _, d := range r.Domains {
		if d != want[d.Name] {
			t.Errorf("domain %s: %+v, want %+v", d.Name, d, want[d.Name])
		}
	}
	if r.Resource != gpu || len(r.Domains) != 3 {
		t.Fatalf("%+v", r)
	}
}

func TestWireRoundTrip(t *testing.T) {
	in := Reservations{Leader: true, Pins: []Pin{{Gang: "u/g", TopologyKey: clique, Domain: "b", Forming: true, Remaining: 1,
		Reserved: []ReservedSlot{{Node: "b-1", Members: 1, Each: map[string]int64{gpu: 2}}}}}}
	raw, err := json.Marshal(map[string]any{"componentconfig": map[string]string{"x": "y"}, DebugKey: in})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(raw)
	if err != nil || len(out.Pins) != 1 || out.Pins[0].ReservedMembers() != 1 || !out.Leader {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := Decode([]byte(`{"componentconfig":{}}`)); err == nil {
		t.Fatal("a /configz without the entry decoded")
	}
}

// A member waiting at Permit (assumed, unbound in the API) occupies its node and counts as
// placed, as in the scheduler's snapshot.
func TestAssumedMembersOccupy(t *testing.T) {
	c := cluster()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "w", UID: "pg"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}}
	c.Pods = append(c.Pods, pod("t", "w-0", "", "w", 1), pod("t", "w-1", "", "w", 1))
	c.Reservations = &Reservations{Leader: true, Assumed: []AssumedPod{{Namespace: "t", Name: "w-0", UID: "uid-w-0", Node: "a-1"}}}
	r, err := Explain(c, Request{PodGroup: pg})
	if err != nil {
		t.Fatal(err)
	}
	if r.Placed != 1 || r.ChosenDomain != "a" || r.Domains[0].Free[gpu] != 7 {
		t.Fatalf("%+v", r)
	}
}

func resourceOf(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// A gang placed whole: its domain, and its planning again without its members.
func TestExplainPlacedGang(t *testing.T) {
	c := cluster()
	c.Reservations = &Reservations{Leader: true, Pins: []Pin{{Gang: "t/bound", TopologyKey: clique, Domain: "b", MinMember: 3}}}
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "bound", UID: "pg"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 3}}
	r, err := Explain(c, Request{PodGroup: pg})
	if err != nil {
		t.Fatal(err)
	}
	want := "the gang is placed: 3 members on nodes of b; planned again without them, best fit: a has the least room (6) of the 2 domains"
	if r.ChosenDomain != "b" || r.Placed != 3 || !strings.HasPrefix(r.Reason, want) || r.Domains[1].Free[gpu] != 8 {
		t.Fatalf("%+v", r)
	}
}
