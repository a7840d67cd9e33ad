package integration

import (
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

// The placement annotations OMEGangPack puts on the Binding of a gang member, as the API
// server stores them on the pod (docs/reference.md, "Placement annotations").

var placementKeys = []string{gangpack.DomainAnnotation, gangpack.DomainKeyAnnotation,
	gangpack.GroupDomainAnnotation, gangpack.GroupDomainKeyAnnotation}

// placementAnnotations returns the pod's placement annotations (only those).
func placementAnnotations(p *v1.Pod) map[string]string {
	out := map[string]string{}
	for _, k := range placementKeys {
		if v, ok := p.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// wantPlacement asserts that the pod carries its node's value of key as its domain and, when
// groupKey is not "", its node's value of groupKey as its group domain, and nothing else.
func (e *env) wantPlacement(pod, node, key, groupKey string) {
	e.t.Helper()
	p, err := e.cp.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pod %s: %v", pod, err)
	}
	want := map[string]string{}
	if key != "" {
		want[gangpack.DomainAnnotation], want[gangpack.DomainKeyAnnotation] = e.labelOf(node, key), key
	}
	if groupKey != "" {
		want[gangpack.GroupDomainAnnotation], want[gangpack.GroupDomainKeyAnnotation] = e.labelOf(node, groupKey), groupKey
	}
	if got := placementAnnotations(p); !maps.Equal(got, want) {
		e.t.Errorf("pod %s on %s: placement annotations %v, want %v", pod, node, got, want)
	}
}

// A gang's members carry their domain from the write that binds them; a standalone pod
// carries nothing.
func TestPlacementAnnotations(t *testing.T) {
	e := newEnv(t)
	e.domain("c4", 4, 1)
	e.domain("c2", 2, 1)
	writes := e.watchBinds()
	e.startScheduler(devenv.Profile{})
	e.podGroup("g", 2, domainKey, 60)
	pods := e.gang("g", 2, 1, false)
	e.pod(devenv.PodSpec{Name: "solo", GPUs: 1})
	got := e.bound(30*time.Second, append(pods, "solo")...)
	if d := e.oneDomain(map[string]string{"g-0": got["g-0"], "g-1": got["g-1"]}, domainKey); d != "c2" {
		t.Fatalf("gang in %s, want c2", d)
	}
	for _, p := range pods {
		e.wantPlacement(p, got[p], domainKey, "")
	}
	e.wantPlacement("solo", got["solo"], "", "")
	first := writes(append(pods, "solo")...)
	for _, p := range pods {
		want := map[string]string{gangpack.DomainAnnotation: "c2", gangpack.DomainKeyAnnotation: domainKey}
		if !maps.Equal(first[p].annotations, want) {
			t.Errorf("pod %s: the write that bound it carried %v, want %v", p, first[p].annotations, want)
		}
	}
	if b, ok := first["solo"]; !ok || len(b.annotations) != 0 {
		t.Errorf("solo: the write that bound it carried %v (seen %v), want no placement annotations", b.annotations, ok)
	}
}
