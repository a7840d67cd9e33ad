package integration

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/configz"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// TestExplainAgreesWithSchedulerDRA: on random DRA states on the real API server (cliques whose
// nodes publish 0 to 4 GPU devices and maybe a channel, some devices already held by allocated
// claims), `kubectl ome explain` for a new gang whose members take devices through claim
// templates, reading the DRA objects from the API server, predicts what the scheduler then
// does: the same domain, or Pending, in at least 99 % of the states (OME_DRA_AGREEMENT_STATES,
// default 100; OME_AGREEMENT_SEED).
func TestExplainAgreesWithSchedulerDRA(t *testing.T) {
	states := envInt("OME_DRA_AGREEMENT_STATES", 100)
	seed := int64(envInt("OME_AGREEMENT_SEED", 1))
	e := newDRAEnv(t)
	e.claimTemplate("gpu-1", devenv.ExactDevices("gpu", gpuClass, 1))
	e.claimTemplate("gpu-2", devenv.ExactDevices("gpu", gpuClass, 2))
	e.claimTemplate("channel", devenv.ExactDevices("channel", channelClass, 1))
	e.startScheduler(devenv.Profile{})
	mux := http.NewServeMux()
	configz.InstallHandler(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	agree, placed, skipped := 0, 0, 0
	var disagreements []string
	start := time.Now()
	for s := 0; s < states; s++ {
		a := &agreementState{env: e, n: s, rng: rand.New(rand.NewSource(seed + int64(s))), url: srv.URL}
		predicted, reason, got, ok := a.runDRA()
		if !ok {
			skipped++
			t.Logf("state %d skipped: the resourceclaim controller did not report the members' claims in the pods' status within 30s", s)
			a.cleanupDRA()
			continue
		}
		if got != "" {
			placed++
		}
		if predicted == got {
			agree++
		} else {
			disagreements = append(disagreements, fmt.Sprintf("state %d (seed %d): explain said %q (%s), the scheduler %q; %s",
				s, seed+int64(s), predicted, reason, got, a.describe()))
		}
		a.cleanupDRA()
	}
	evaluated := states - skipped
	if evaluated < states*95/100 {
		t.Fatalf("only %d of %d states could be evaluated", evaluated, states)
	}
	rate := float64(agree) / float64(evaluated)
	t.Logf("explain agreed with the scheduler in %d of %d DRA states (%.1f %%) in %s; the gang was placed in %d; %d states skipped",
		agree, evaluated, 100*rate, time.Since(start).Round(time.Second), placed, skipped)
	for _, d := range disagreements {
		t.Log("disagreement:", d)
	}
	if rate < 0.99 {
		t.Fatalf("agreement %.1f %% < 99 %%", 100*rate)
	}
	if placed < evaluated/5 || placed > evaluated*4/5 {
		t.Errorf("the gang was placed in %d of %d states: the states do not exercise both answers", placed, evaluated)
	}
}

// runDRA builds a DRA state, explains the new gang and lets the scheduler place it; ok is
// false when the state could not be evaluated (the members' claims never showed in their
// status).
func (a *agreementState) runDRA() (predicted, reason, got string, ok bool) {
	a.key = fmt.Sprintf("agree.ome.io/d%d", a.n)
	a.nodes = map[string][]string{}
	for c := 0; c < 2+a.rng.Intn(3); c++ {
		d := fmt.Sprintf("c%d", c)
		for i := 0; i < 1+a.rng.Intn(4); i++ {
			node := a.node(devenv.NodeSpec{Name: fmt.Sprintf("d%d-%s-%d", a.n, d, i), Labels: map[string]string{a.key: d}})
			gpus, channel := a.rng.Intn(5), a.rng.Intn(2) == 0
			a.slice(gpuClass, node, "gpu", gpus)
			if channel {
				a.slice(channelClass, node, "channel", 1)
			}
			held := a.holdDevices(node, gpus)
			a.nodes[d] = append(a.nodes[d], node)
			a.log = append(a.log, fmt.Sprintf("%s: %d GPU (%d held)%s", node, gpus, held, map[bool]string{true: " + channel"}[channel]))
		}
	}
	group := fmt.Sprintf("d%d-new", a.n)
	size, tmpl, channel := 1+a.rng.Intn(4), []string{"gpu-1", "gpu-2"}[a.rng.Intn(2)], a.rng.Intn(2) == 0
	claims := []devenv.PodClaim{{Name: "gpu", Template: tmpl}}
	if channel {
		claims = append(claims, devenv.PodClaim{Name: "channel", Template: "channel"})
	}
	a.podGroup(group, int32(size), a.key, 0)
	var members []string
	for i := 0; i < size; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		a.pod(devenv.PodSpec{Name: name, Group: group, CPU: "100m", Claims: claims, Gates: []string{"ome.io/agreement"}})
		members = append(members, name)
	}
	a.log = append(a.log, fmt.Sprintf("new gang of %d, %s each, channel %v", size, tmpl, channel))
	if !a.waitClaims(members, len(claims)) {
		return "", "", "", false
	}
	res := a.explain(group)
	for _, m := range members {
		a.ungate(m)
	}
	return res.ChosenDomain, res.Reason, a.outcome(members), true
}

// holdDevices, a third of the time, allocates some of node's GPU devices to a claim of
// another workload (status written as a driver-less allocation would leave it) and returns
// how many.
func (a *agreementState) holdDevices(node string, gpus int) int {
	if gpus == 0 || a.rng.Intn(3) != 0 {
		return 0
	}
	k := 1 + a.rng.Intn(gpus)
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: node + "-held"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			devenv.ExactDevices("gpu", gpuClass, int64(k))}}}}
	c, err := a.cp.Client.ResourceV1().ResourceClaims(a.ns).Create(a.ctx, c, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatalf("create claim %s-held: %v", node, err)
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for i := 0; i < k; i++ {
		results = append(results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: gpuClass, Pool: node, Device: fmt.Sprintf("gpu-%d", i)})
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	if _, err := a.cp.Client.ResourceV1().ResourceClaims(a.ns).UpdateStatus(a.ctx, c, metav1.UpdateOptions{}); err != nil {
		a.t.Fatalf("allocate claim %s: %v", c.Name, err)
	}
	return k
}

// waitClaims waits (up to 30s) until the resourceclaim controller created every member's
// claims and named them in the pod's status: kube-scheduler keeps a member out of the queue
// until then. It reports whether they all were.
func (a *agreementState) waitClaims(members []string, per int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for _, m := range members {
			p, err := a.cp.Client.CoreV1().Pods(a.ns).Get(a.ctx, m, metav1.GetOptions{})
			if err == nil && len(p.Status.ResourceClaimStatuses) == per {
				done++
			}
		}
		if done == len(members) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// cleanupDRA is cleanup with the state's claims and slices.
func (a *agreementState) cleanupDRA() {
	a.cleanup()
	c := a.cp.Client.ResourceV1()
	_ = c.ResourceClaims(a.ns).DeleteCollection(a.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	prefix := fmt.Sprintf("d%d-", a.n)
	if list, err := c.ResourceSlices().List(a.ctx, metav1.ListOptions{LabelSelector: draTestLabel + "=" + a.ns}); err == nil {
		for _, s := range list.Items {
			if strings.HasPrefix(s.Name, prefix) {
				_ = c.ResourceSlices().Delete(a.ctx, s.Name, metav1.DeleteOptions{})
			}
		}
	}
}
