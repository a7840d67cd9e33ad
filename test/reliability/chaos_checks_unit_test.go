package reliability

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The chaos checks on hand-made observations (no cluster): what they report and, as
// importantly, what they must not report.

var checkNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// ago is checkNow minus seconds.
func ago(sec int) time.Time { return checkNow.Add(-time.Duration(sec) * time.Second) }

// member is a live pod of gang g created at created and bound at bound (never when zero).
func member(name, g string, created, bound time.Time) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{devenv.PodGroupLabel: g}}}
	if !bound.IsZero() {
		p.Spec.NodeName = "n-" + name
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(bound)})
	}
	return p
}

// evicted marks the pod as the scheduler's preemption victim at t, Terminating.
func evicted(p v1.Pod, t time.Time) v1.Pod {
	p.DeletionTimestamp = ptrTime(t)
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler, LastTransitionTime: metav1.NewTime(t)})
	return p
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// checkWorld observes pods of gangs g (minMember 3) and grp-a / grp-b (partners of placement
// group grp, minMember 1); the chaos last deleted a member of g at cut (never when zero).
func checkWorld(t *testing.T, cut time.Time, pods ...v1.Pod) (*chaos, *observation) {
	c := newChaos(&world{t: t, ns: "rel"}, 1)
	if !cut.IsZero() {
		c.cuts["g"] = cut
	}
	grp := &chaosGroup{name: "grp", size: 2, partners: []string{"grp-a", "grp-b"}}
	c.groupOf["grp-a"], c.groupOf["grp-b"] = grp, grp
	o := &observation{now: checkNow, pgs: map[string]*schedv1alpha1.PodGroup{}, nodes: map[string]*v1.Node{}, bound: map[string][]*v1.Pod{}}
	for g, n := range map[string]int32{"g": 3, "grp-a": 1, "grp-b": 1} {
		o.pgs[g] = devenv.NewPodGroup("rel", g, n, domainKey, 20)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			o.nodes[p.Spec.NodeName] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.Spec.NodeName, Labels: map[string]string{domainKey: "d-" + p.Labels["domain"]}}}
		}
	}
	o.setPods(pods)
	return c, o
}

func TestChaosShortGangCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  time.Time
		pods []v1.Pod
		want string // "" = no violation
	}{
		{"bound short, nothing deleted", time.Time{}, []v1.Pod{member("a", "g", ago(60), ago(20)), member("b", "g", ago(60), ago(20))},
			"gang rel/g short: 2 of 3 members bound, a at 11:59:40, b at 11:59:40 bound after the chaos last deleted a member (never)"},
		{"binds still landing", time.Time{}, []v1.Pod{member("a", "g", ago(60), ago(3)), member("b", "g", ago(60), ago(3))}, ""},
		{"short by the chaos's deletion", ago(10), []v1.Pod{member("a", "g", ago(60), ago(40)), member("b", "g", ago(60), ago(40))}, ""},
		{"released with the deleted member", ago(30), []v1.Pod{member("a", "g", ago(60), ago(27)), member("b", "g", ago(60), ago(27))}, ""},
		{"bound long after the deletion", ago(30), []v1.Pod{member("a", "g", ago(60), ago(20)), member("b", "g", ago(60), ago(20))}, "gang rel/g short"},
		{"a replacement binds alone", ago(30), []v1.Pod{member("a", "g", ago(60), ago(40)), member("r", "g", ago(29), ago(28)), member("s", "g", ago(29), time.Time{})},
			"r at 11:59:32 bound after the chaos last deleted a member (11:59:30)"},
		{"whole", time.Time{}, []v1.Pod{member("a", "g", ago(60), ago(20)), member("b", "g", ago(60), ago(20)), member("c", "g", ago(60), ago(20))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := checkWorld(t, tc.cut, tc.pods...)
			got := strings.Join(c.shortGangs(o), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("shortGangs = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChaosWholeVictimCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []v1.Pod
		want string
	}{
		{"one member left bound", []v1.Pod{evicted(member("a", "g", ago(60), ago(50)), ago(5)), member("b", "g", ago(60), ago(50))},
			"gang rel/g partly evicted: a preempted at 11:59:55, b@n-b bound before and still bound"},
		{"whole gang evicted", []v1.Pod{evicted(member("a", "g", ago(60), ago(50)), ago(5)), evicted(member("b", "g", ago(60), ago(50)), ago(5))}, ""},
		{"eviction in progress", []v1.Pod{evicted(member("a", "g", ago(60), ago(50)), ago(1)), member("b", "g", ago(60), ago(50))}, ""},
		{"member bound after the eviction", []v1.Pod{evicted(member("a", "g", ago(60), ago(50)), ago(5)), member("r", "g", ago(4), ago(4))}, ""},
		{"bound in the second of the eviction", []v1.Pod{evicted(member("a", "g", ago(60), ago(50)), ago(5)), member("r", "g", ago(6), ago(5))}, ""},
		{"partner left bound", []v1.Pod{evicted(member("a", "grp-a", ago(60), ago(50)), ago(5)), member("b", "grp-b", ago(60), ago(50))},
			"placement group rel/grp partly evicted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := checkWorld(t, time.Time{}, tc.pods...)
			got := strings.Join(c.partlyEvicted(o), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("partlyEvicted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChaosSplitGroupCheck(t *testing.T) {
	inDomain := func(p v1.Pod, d string) v1.Pod { p.Labels["domain"] = d; return p }
	for _, tc := range []struct {
		name  string
		pods  []v1.Pod
		split bool
	}{
		{"one domain", []v1.Pod{inDomain(member("a", "grp-a", ago(60), ago(50)), "1"), inDomain(member("b", "grp-b", ago(60), ago(50)), "1")}, false},
		{"two domains", []v1.Pod{inDomain(member("a", "grp-a", ago(60), ago(50)), "1"), inDomain(member("b", "grp-b", ago(60), ago(50)), "2")}, true},
		{"other partner unplaced", []v1.Pod{inDomain(member("a", "grp-a", ago(60), ago(50)), "1"), member("b", "grp-b", ago(60), time.Time{})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := checkWorld(t, time.Time{}, tc.pods...)
			if got := c.splitGroups(o); (len(got) > 0) != tc.split {
				t.Fatalf("splitGroups = %q, want split %v", got, tc.split)
			}
		})
	}
}

// A split gang (or placement group) is forgiven as a relabel race only when a member was bound
// within relabelRace of its node's relabel.
func TestChaosRacedRelabelCheck(t *testing.T) {
	inDomain := func(p v1.Pod, d string) v1.Pod { p.Labels["domain"] = d; return p }
	split := []v1.Pod{inDomain(member("a", "g", ago(60), ago(10)), "1"), inDomain(member("b", "g", ago(60), ago(10)), "1"), inDomain(member("c", "g", ago(60), ago(10)), "2")}
	whole := []v1.Pod{inDomain(member("a", "g", ago(60), ago(10)), "1"), inDomain(member("b", "g", ago(60), ago(10)), "1"), inDomain(member("c", "g", ago(60), ago(10)), "1")}
	group := []v1.Pod{inDomain(member("a", "grp-a", ago(60), ago(10)), "1"), inDomain(member("b", "grp-b", ago(60), ago(10)), "2")}
	for _, tc := range []struct {
		name      string
		pods      []v1.Pod
		node      string
		relabeled time.Time
		want      []string
	}{
		{"split, relabelled just before the bind", split, "n-c", ago(11), []string{"g"}},
		{"split, relabelled just after the bind", split, "n-c", ago(9), []string{"g"}},
		{"split, relabelled long before the bind", split, "n-c", ago(30), nil},
		{"whole, relabelled just before the bind", whole, "n-c", ago(11), nil},
		{"split, another node relabelled", split, "n-x", ago(11), nil},
		{"partner split, relabelled just before the bind", group, "n-b", ago(11), []string{"grp-a", "grp-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := checkWorld(t, time.Time{}, tc.pods...)
			c.relabelled[tc.node] = tc.relabeled
			if got := c.racedRelabels(o); !slices.Equal(got, tc.want) {
				t.Fatalf("racedRelabels = %q, want %q", got, tc.want)
			}
		})
	}
}
