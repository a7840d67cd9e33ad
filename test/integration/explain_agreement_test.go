package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/configz"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/internal/omecli"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// TestExplainAgreesWithScheduler builds random cluster states (cliques of varied size and
// free room, bound gangs and standalone pods, a forming gang holding a reservation), asks
// `kubectl ome explain` (the real command, reading the API server and the scheduler's
// /configz entry) where a new gang goes, then lets the scheduler place it: the predicted
// domain must be the one the gang binds in, and "fits nowhere" must be a gang that stays
// Pending, in at least 99 % of the states (OME_AGREEMENT_STATES, default 200; the seed is
// OME_AGREEMENT_SEED, default 1). Every disagreement is logged with its state.
func TestExplainAgreesWithScheduler(t *testing.T) {
	states := envInt("OME_AGREEMENT_STATES", 200)
	seed := int64(envInt("OME_AGREEMENT_SEED", 1))
	e := newEnv(t)
	e.startScheduler(devenv.Profile{})
	mux := http.NewServeMux()
	configz.InstallHandler(mux)
	srv := httptest.NewServer(mux) // the handler the secure port serves /configz with
	defer srv.Close()
	agree, nowhere, held, preferred := 0, 0, 0, 0
	var disagreements []string
	start := time.Now()
	for s := 0; s < states; s++ {
		a := &agreementState{env: e, n: s, rng: rand.New(rand.NewSource(seed + int64(s))), url: srv.URL}
		predicted, reason, got := a.run()
		if predicted == "" {
			nowhere++
		}
		if a.held {
			held++
		}
		if strings.HasPrefix(reason, "preferred:") {
			preferred++
		}
		if predicted == got {
			agree++
		} else {
			disagreements = append(disagreements, fmt.Sprintf("state %d (seed %d): explain said %q (%s), the scheduler %q; %s",
				s, seed+int64(s), predicted, reason, got, a.describe()))
		}
		a.cleanup()
	}
	rate := float64(agree) / float64(states)
	t.Logf("explain agreed with the scheduler in %d of %d states (%.1f %%) in %s; %d states with a forming gang's hold, %d where the gang fits nowhere, %d where its preference beat best fit",
		agree, states, 100*rate, time.Since(start).Round(time.Second), held, nowhere, preferred)
	for _, d := range disagreements {
		t.Log("disagreement:", d)
	}
	if rate < 0.99 {
		t.Fatalf("agreement %.1f %% < 99 %%", 100*rate)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// agreementState is one random state, on nodes and gangs of its own topology key.
type agreementState struct {
	*env
	n     int
	rng   *rand.Rand
	url   string
	key   string
	nodes map[string][]string // domain → nodes
	gpus  map[string]int64    // node → free GPUs left by the state's fixtures
	log   []string
	held  bool // a forming gang holds room
}

// run builds the state, explains the new gang and lets the scheduler place it; it returns the
// predicted domain ("" = fits nowhere), explain's reason, and the scheduler's domain ("" =
// stayed Pending).
func (a *agreementState) run() (string, string, string) {
	a.key = fmt.Sprintf("agree.ome.io/s%d", a.n)
	a.cliques()
	a.boundLoad()
	a.formingGang()
	group := fmt.Sprintf("s%d-new", a.n)
	size := 1 + a.rng.Intn(5)
	gpus := []int64{1, 1, 2, 4, 8}[a.rng.Intn(5)]
	apart := a.rng.Intn(3) == 0
	hints := a.hints()
	a.podGroup(group, int32(size), a.key, 0)
	var members []string
	for i := 0; i < size; i++ {
		name := fmt.Sprintf("%s-%d", group, i)
		var aff *v1.Affinity
		if hints != nil { // OME's migration preference (docs/design.md §4.1)
			aff = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
				Weight: 50, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
					{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: hints}}}}}}}
		}
		a.pod(devenv.PodSpec{Name: name, Group: group, GPUs: gpus, Apart: apart, Affinity: aff, Gates: []string{"ome.io/agreement"}})
		members = append(members, name)
	}
	a.log = append(a.log, fmt.Sprintf("new gang %d×%d GPU apart=%v hints=%v", size, gpus, apart, hints))
	res := a.explain(group)
	for _, m := range members {
		a.ungate(m)
	}
	return res.ChosenDomain, res.Reason, a.outcome(members)
}

// hints returns, half the time, one or two random nodes the new gang prefers (nil otherwise).
func (a *agreementState) hints() []string {
	if a.rng.Intn(2) == 0 {
		return nil
	}
	var all []string
	for _, d := range slices.Sorted(maps.Keys(a.nodes)) {
		all = append(all, a.nodes[d]...)
	}
	var out []string
	for k := 1 + a.rng.Intn(2); k > 0; k-- {
		out = append(out, all[a.rng.Intn(len(all))])
	}
	return out
}

// cliques creates 2 to 4 cliques of 1 to 4 nodes with 4 or 8 GPUs each.
func (a *agreementState) cliques() {
	a.nodes, a.gpus = map[string][]string{}, map[string]int64{}
	for c := 0; c < 2+a.rng.Intn(3); c++ {
		d := fmt.Sprintf("c%d", c)
		size, gpus := 1+a.rng.Intn(4), []int64{4, 8}[a.rng.Intn(2)]
		for i := 0; i < size; i++ {
			name := a.node(devenv.NodeSpec{Name: fmt.Sprintf("s%d-%s-%d", a.n, d, i), GPUs: gpus, Labels: map[string]string{a.key: d}})
			a.nodes[d] = append(a.nodes[d], name)
			a.gpus[name] = gpus
		}
		a.log = append(a.log, fmt.Sprintf("%s: %d×%d GPU", d, size, gpus))
	}
}

// boundLoad binds standalone pods (another scheduler's) on some nodes and, half the time,
// a gang's members directly into one clique.
func (a *agreementState) boundLoad() {
	for _, ns := range a.nodes {
		for _, node := range ns {
			if a.rng.Intn(5) < 2 {
				g := 1 + a.rng.Int63n(a.gpus[node])
				a.occupy(fmt.Sprintf("%s-solo", node), node, g)
				a.gpus[node] -= g
				a.log = append(a.log, fmt.Sprintf("solo %d GPU on %s", g, node))
			}
		}
	}
	if a.rng.Intn(2) == 0 {
		return
	}
	d := fmt.Sprintf("c%d", a.rng.Intn(len(a.nodes)))
	group, placed := fmt.Sprintf("s%d-bound", a.n), 0
	for _, node := range a.nodes[d] {
		if a.gpus[node] > 0 && a.rng.Intn(2) == 0 {
			a.bindMember(fmt.Sprintf("%s-%d", group, placed), group, node, 1)
			a.gpus[node]--
			placed++
		}
	}
	if placed > 0 {
		a.podGroup(group, int32(placed), a.key, 0)
		a.log = append(a.log, fmt.Sprintf("bound gang of %d in %s", placed, d))
	}
}

// formingGang, half the time, creates a gang whose last member carries a scheduling gate:
// the others are placed and wait at Permit, and the gang holds room for the gated one.
func (a *agreementState) formingGang() {
	if a.rng.Intn(2) == 0 {
		return
	}
	group, size, gpus := fmt.Sprintf("s%d-form", a.n), 2+a.rng.Intn(3), []int64{1, 2, 4}[a.rng.Intn(3)]
	a.podGroup(group, int32(size), a.key, 0)
	for i := 0; i < size; i++ {
		spec := devenv.PodSpec{Name: fmt.Sprintf("%s-%d", group, i), Group: group, GPUs: gpus}
		if i == size-1 {
			spec.Gates = []string{"ome.io/agreement"}
		}
		a.pod(spec)
	}
	key := a.ns + "/" + group
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r := a.reservations(); r != nil {
			for _, p := range r.Pins {
				if p.Gang == key && p.Remaining == 1 {
					a.held = true
					a.log = append(a.log, fmt.Sprintf("forming gang %d×%d GPU holds %s", size, gpus, p.Domain))
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.log = append(a.log, fmt.Sprintf("forming gang %d×%d GPU found no domain", size, gpus))
}

// reservations reads the scheduler's /configz entry.
func (a *agreementState) reservations() *explain.Reservations {
	resp, err := http.Get(a.url + "/configz")
	if err != nil {
		a.t.Fatalf("GET /configz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r, err := explain.Decode(body)
	if err != nil {
		a.t.Fatalf("decode /configz: %v", err)
	}
	return r
}

// explain runs `kubectl ome explain podgroup NAME -o json` against the control plane.
func (a *agreementState) explain(group string) *explain.Result {
	var out, errOut bytes.Buffer
	args := []string{"explain", "podgroup", group, "-n", a.ns, "-o", "json", "--kubeconfig", a.cp.KubeConfigPath, "--scheduler-url", a.url}
	if code := omecli.Run(args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}); code != omecli.ExitOK {
		a.t.Fatalf("kubectl ome %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	var r explain.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		a.t.Fatalf("explain output %q: %v", out.String(), err)
	}
	if !r.ReservationsKnown {
		a.t.Fatalf("explain did not read the reservations: %s", errOut.String())
	}
	return &r
}

// outcome waits until every member is bound (their domain) or every member was refused
// and none bound for a while ("": stays Pending).
func (a *agreementState) outcome(members []string) string {
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		placed, refused := map[string]string{}, 0
		for _, m := range members {
			p, err := a.cp.Client.CoreV1().Pods(a.ns).Get(a.ctx, m, metav1.GetOptions{})
			if err != nil {
				a.t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				placed[m] = p.Spec.NodeName
			} else if unschedulable(p) {
				refused++
			}
		}
		if len(placed) == len(members) {
			return a.oneDomain(placed, a.key)
		}
		if len(placed) == 0 && refused == len(members) && time.Since(start) > 3*time.Second {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.t.Fatalf("state %d: gang neither placed nor refused in 30s; %s", a.n, a.describe())
	return ""
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func (a *agreementState) describe() string { return strings.Join(a.log, "; ") }

// cleanup deletes the state's pods, PodGroups and nodes.
func (a *agreementState) cleanup() {
	bg := a.ctx
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	_ = a.cp.Client.CoreV1().Pods(a.ns).DeleteCollection(bg, zero, metav1.ListOptions{})
	_ = a.cp.PodGroups.SchedulingV1alpha1().PodGroups(a.ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
	for _, ns := range a.nodes {
		for _, n := range ns {
			_ = a.cp.Client.CoreV1().Nodes().Delete(bg, n, metav1.DeleteOptions{})
		}
	}
	a.env.nodes = nil
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := a.cp.Client.CoreV1().Pods(a.ns).List(bg, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.t.Fatalf("state %d: pods not gone after cleanup", a.n)
}
