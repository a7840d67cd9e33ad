package gangpack

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// draGroupWorld: cliques c4 (four nodes) and c2 (two), eight GPUs and one channel per node.
// Every channel is held: c4's by lower-priority pods, c2's by higher-priority ones; a
// lower-priority pod on c4-0 holds GPUs only. Partners a and b (two members each, of the
// placement group grp) take a channel per member through claims of the templates named.
func draGroupWorld(t *testing.T, aTemplate, bTemplate string) (*preemptWorld, []*v1.Pod, []*v1.Pod) {
	nodes := append(cliqueNodes("c4", "", 4), cliqueNodes("c2", "", 2)...)
	for _, n := range nodes {
		n.Status.Capacity[testGPU] = resource.MustParse("8")
		n.Status.Allocatable[testGPU] = resource.MustParse("8")
	}
	m := channelManager(nodes)
	var pods []*v1.Pod
	for _, n := range []string{"c4-0", "c4-1", "c4-2", "c4-3"} {
		pods = append(pods, holdChannel(m, prio(standalone("low-"+n), 0), n))
	}
	for _, n := range []string{"c2-0", "c2-1"} {
		pods = append(pods, holdChannel(m, prio(standalone("high-"+n), 1000), n))
	}
	pods = append(pods, placedOn(prio(standalone("gpus"), 0), "c4-0"))
	a, b := members("a", 2), members("b", 2)
	for _, p := range a {
		withTemplate(prio(p, 100), aTemplate)
	}
	for _, p := range b {
		withTemplate(prio(p, 100), bTemplate)
	}
	w := newPreemptWorldWith(t, m, groupArgs(), nodes, append(append(pods, a...), b...),
		partnerPG("a", 2, "grp", "2", ""), partnerPG("b", 2, "grp", "2", ""))
	addTemplate(t, w.world, "channel", channelClass)
	addTemplate(t, w.world, "channel-too", channelClass)
	return w, a, b
}

// withTemplate gives p a claim from template (one device of its class).
func withTemplate(p *v1.Pod, template string) *v1.Pod {
	withChannel(p).Spec.ResourceClaims[0].ResourceClaimTemplateName = &template
	return p
}

// A placement group whose partners take a channel per member preempts for channels as one
// unit: c4's four channel holders are evicted (c2's are of higher priority), the GPU-only pod
// is not (its eviction frees no channel), and the other partner waits on the same victims.
func TestDRAGroupPreemptsForDevices(t *testing.T) {
	w, a, b := draGroupWorld(t, "channel", "channel")
	res, st := w.postFilter(a[0])
	if !st.IsSuccess() || res == nil {
		t.Fatalf("PostFilter(a-0) = %v, %v; want a preemption", res, st)
	}
	want := []string{"a-0", "a-1", "b-0", "b-1", "gpus", "high-c2-0", "high-c2-1"}
	if got := w.remaining(); !slices.Equal(got, want) {
		t.Fatalf("pods left %v, want %v: c4's channel holders evicted, nothing else", got, want)
	}
	if _, st := w.postFilter(b[0]); !strings.Contains(st.Message(), "preemption: waiting for 4 preempted pods to terminate in domain c4") {
		t.Fatalf("PostFilter(b-0) = %q, want it to wait on the group's victims", st.Message())
	}
}

// Partners whose claims differ (here: two templates, alike in what they ask but not the same
// claims) are not counted as one kind of device slot: the group waits, nothing is evicted.
func TestDRAGroupDifferentClaimsWaits(t *testing.T) {
	w, a, _ := draGroupWorld(t, "channel", "channel-too")
	w.postFilter(a[0])
	if got := w.remaining(); len(got) != 11 {
		t.Fatalf("pods left %v, want all 11", got)
	}
}
