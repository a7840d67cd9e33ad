package reliability

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// chaosDuration is how long TestChaosDuringFormation injects faults: OME_SOAK_DURATION
// (`make soak` sets it), else 25 s.
func chaosDuration(t *testing.T) time.Duration {
	if s := os.Getenv("OME_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("OME_SOAK_DURATION: %v", err)
		}
		return d
	}
	return 25 * time.Second
}

// chaosSeed is OME_CHAOS_SEED when set (to replay a run's sequence of operations), else a
// random seed.
func chaosSeed(t *testing.T) int64 {
	if s := os.Getenv("OME_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("OME_CHAOS_SEED: %v", err)
		}
		return seed
	}
	return rand.New(rand.NewSource(time.Now().UnixNano())).Int63()
}

// The chaos cluster: chaosDomains domains of chaosPerDomain one-GPU nodes; the first half of
// the domains in zone-a, the rest in zone-b.
const (
	chaosDomains, chaosPerDomain = 10, 3
	chaosZoneKey                 = devenv.ZoneKey
	// groupLabel is the chart's placementGroupLabel.
	groupLabel = "ome.io/placement-group"
)

// chaosNodeLabels are the topology labels of a node of domain d.
func chaosNodeLabels(d int) map[string]string {
	zone := "zone-a"
	if d >= chaosDomains/2 {
		zone = "zone-b"
	}
	return map[string]string{domainKey: fmt.Sprintf("d%02d", d), chaosZoneKey: zone}
}

// chaosPriorities are the PriorityClasses gangs and standalone pods get at random. The test
// API server runs without the Priority admission plugin, so the chaos sets spec.priority to
// the class's value itself, as that plugin would.
var chaosPriorities = []schedulingv1.PriorityClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-low"}, Value: 10},
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-mid"}, Value: 100},
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-high"}, Value: 1000},
}

// Gangs (some of them partners of a placement group, some with a hard zone spread on their
// leader) and standalone pods are created at random priorities, members first or PodGroup
// first, while members of forming and of bound gangs are deleted (gracefully: they stay
// Terminating for a while) and replaced, bound gangs restart whole, members lost to
// preemption are re-created as a controller would, whole gangs finish, free nodes are
// cordoned, deleted, re-created and relabelled, PodGroups are deleted and re-created and
// minMember lowered, with the plugin's preemption on. The invariants (chaos_checks_test.go)
// are checked every second; at the end every gang is either whole or not placed at all.
func TestChaosDuringFormation(t *testing.T) {
	w := newWorld(t)
	for d := 0; d < chaosDomains; d++ {
		for i := 0; i < chaosPerDomain; i++ {
			if _, err := devenv.CreateNode(w.ctx, w.cp.Client, devenv.NodeSpec{Name: fmt.Sprintf("d%02d-%d", d, i), GPUs: 1, Labels: chaosNodeLabels(d)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range chaosPriorities {
		if _, err := w.cp.Client.SchedulingV1().PriorityClasses().Create(w.ctx, &chaosPriorities[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	args := strings.Replace(devenv.DefaultArgs, "gcIntervalSeconds: 60\n", "", 1) + "\ngcIntervalSeconds: 2\npreemption: true"
	w.scheduler("sched", devenv.Profile{Args: args})
	seed := chaosSeed(t)
	t.Logf("chaos seed %d (OME_CHAOS_SEED=%d replays the operations)", seed, seed)
	c := newChaos(w, seed)
	deadline := time.Now().Add(chaosDuration(t))
	lastCheck := time.Now()
	ops := 0
	for time.Now().Before(deadline) {
		c.step()
		ops++
		time.Sleep(time.Duration(50+c.rng.Intn(150)) * time.Millisecond)
		if time.Since(lastCheck) > time.Second {
			c.invariants()
			lastCheck = time.Now()
		}
	}
	t.Logf("%d chaos operations: %v", ops, c.counts)
	// Settle: nodes back, then every gang must end whole or entirely unplaced.
	c.uncordonAll()
	err := wait.PollUntilContextTimeout(w.ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		c.invariants()
		v, err := devenv.Violations(ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns)
		return err == nil && len(v) == 0, nil
	})
	if err != nil {
		v, _ := devenv.Violations(w.ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns)
		c.fail("gangs still partially bound after settling:\n%s", strings.Join(v, "\n"))
	}
	c.unexplainedVictims()
	t.Logf("%d pods preempted (%d Preempted events checked)", len(c.victims), len(c.seenEvents))
	c.logPlaced()
	if n := w.boundCount(); n < 4 {
		c.fail("only %d pods bound after the chaos run: the scenario placed nothing", n)
	} else {
		t.Logf("%d pods bound at the end, every gang whole", n)
	}
}

type chaosGang struct {
	name    string
	members []string
	next    int
	// size is how many members the gang's controller keeps (its PodGroup's first minMember).
	size  int
	prio  int         // index in chaosPriorities
	group *chaosGroup // the placement group of a partner, else nil
	// spread gangs have a leader carrying a DoNotSchedule zone spread; leader is its name
	// while it exists.
	spread bool
	leader string
}

// chaosGroup is a partner placement group: its PodGroups carry the group label, the size
// annotation and, when key is set, the group topology key annotation.
type chaosGroup struct {
	name     string
	size     int
	key      string
	partners []string
}

type chaos struct {
	w      *world
	seed   int64
	rng    *rand.Rand
	gangs  map[string]*chaosGang
	seq    int
	counts map[string]int
	// protected maps nodes of gangs being repaired to the gang: not cordoned, relabelled or
	// re-created until the gang is whole again.
	protected map[string]string
	// standalone are the standalone pods the chaos created and did not delete.
	standalone []string
	// prio records every pod's priority by name (names are never reused).
	prio map[string]int32
	// groupOf records the placement group of every partner gang ever created.
	groupOf map[string]*chaosGroup
	// cuts maps gangs to when the chaos last deleted one of their members.
	cuts map[string]time.Time
	// victims are the pods seen with the scheduler's preemption condition, by UID.
	victims map[string]*victim
	// seenEvents are the Preempted events already checked, and explained the UIDs of the
	// pods they name.
	seenEvents map[string]bool
	explained  map[string]bool
	// relabelled records when the chaos last relabelled each node.
	relabelled map[string]time.Time
}

func newChaos(w *world, seed int64) *chaos {
	return &chaos{w: w, seed: seed, rng: rand.New(rand.NewSource(seed)), gangs: map[string]*chaosGang{},
		counts: map[string]int{}, protected: map[string]string{}, prio: map[string]int32{},
		groupOf: map[string]*chaosGroup{}, cuts: map[string]time.Time{}, victims: map[string]*victim{},
		seenEvents: map[string]bool{}, explained: map[string]bool{}, relabelled: map[string]time.Time{}}
}

// fail fails the test, naming the seed that replays the run.
func (c *chaos) fail(format string, args ...any) {
	c.w.t.Helper()
	c.w.t.Fatalf("chaos seed %d (rerun with OME_CHAOS_SEED=%d): %s", c.seed, c.seed, fmt.Sprintf(format, args...))
}

func (c *chaos) count(op string) {
	c.counts[op]++
}

func (c *chaos) step() {
	switch r := c.rng.Intn(100); {
	case r < 22:
		c.newGang()
	case r < 28:
		c.newStandalone()
	case r < 34:
		c.finishStandalone()
	case r < 41:
		c.replaceMember()
	case r < 45:
		c.replaceBoundMember()
	case r < 48:
		c.restartGang()
	case r < 60:
		c.finishGang()
	case r < 65:
		c.respawn()
	case r < 73:
		c.cordonFreeNode()
	case r < 77:
		c.recreatePodGroup()
	case r < 81:
		c.lowerMinMember()
	case r < 88:
		c.relabelFreeNode()
	case r < 93:
		c.recreateFreeNode()
	default:
		c.uncordonAll()
	}
}

// pick returns a random live gang (nil when there is none); the choice depends on the seed
// alone.
func (c *chaos) pick() *chaosGang {
	if len(c.gangs) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(c.gangs))
	return c.gangs[names[c.rng.Intn(len(names))]]
}

// logPlaced logs what the run placed at the end, so a run that composes nothing shows.
func (c *chaos) logPlaced() {
	o, err := c.observe()
	if err != nil {
		return
	}
	partners, spread, plain := 0, 0, 0
	for g := range o.bound {
		switch gang := c.gangs[g]; {
		case c.groupOf[g] != nil:
			partners++
		case gang != nil && gang.spread:
			spread++
		default:
			plain++
		}
	}
	c.w.t.Logf("gangs placed at the end: %d partners, %d with a spread leader, %d others", partners, spread, plain)
}
