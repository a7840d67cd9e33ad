package reliability

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// The failover measurement (docs/benchmarks.md, "Repair and failover"): two replicas with
// leader election; each round creates a burst of killGangs gangs of killGangSize one-GPU
// members (PodGroups first, then the members one by one every killPace, in a seeded random
// order across the gangs, each gang's last member behind a scheduling gate that is removed
// later, gang after gang, so that the other members wait at Permit meanwhile) and SIGKILLs
// the leader at a seeded random point of it (creation and releases), then starts a new replica so that two run again. The gangs forming at the kill are those with
// members waiting at Permit: status.nominatedNodeName set and not bound. For each, the round
// records whether it bound in the domain it was nominated in ("kept its domain") and the
// time from the new leader's Lease acquisition (spec.acquireTime) to the gang's last member
// bound.
const (
	killDomains, killPerDomain = 24, 4
	killGangs, killGangSize    = 12, 4
	killPace                   = 25 * time.Millisecond
	killLease                  = 4 * time.Second
	leaseNamespace             = "ome"
)

// failoverKills is OME_FAILOVER_KILLS (the long variant: 20), else 2.
func failoverKills(t *testing.T) int { return envCount(t, "OME_FAILOVER_KILLS", 2) }

// Checks after every round: every gang whole in one domain (no split, no half-bound gang), no
// node double-booked, the Lease taken by another replica. With OME_FAILOVER_KEEP=1 every
// gang forming at a kill must also keep its domain (nominations honoured after failover).
func TestLeaderKillsDuringBursts(t *testing.T) {
	kills := failoverKills(t)
	w := newWorld(t)
	w.domains(killDomains, killPerDomain)
	seed := chaosSeed(t)
	t.Logf("failover seed %d (OME_CHAOS_SEED=%d replays the bursts and kill points), %d kills", seed, seed, kills)
	fo := &failover{w: w, rng: rand.New(rand.NewSource(seed)), next: 1,
		profile: devenv.Profile{LeaderElect: true, LeaseNamespace: leaseNamespace, LeaseDuration: killLease}}
	fo.start()
	fo.start()
	fo.pw = w.watchPods()
	for k := 0; k < kills; k++ {
		fo.round(k)
	}
	fo.report(t)
}

type failover struct {
	w        *world
	rng      *rand.Rand
	profile  devenv.Profile
	replicas []*devenv.Process
	next     int
	pw       *podWatch
	// forming counts the gangs forming at a kill, kept those that bound in the domain they
	// were nominated in; resume is new Lease acquired -> gang bound, per forming gang.
	forming, kept, boundBeforeLease int
	resume                          []time.Duration
	takeover                        []time.Duration // kill -> new Lease acquired
}

func (fo *failover) start() {
	fo.replicas = append(fo.replicas, fo.w.scheduler(fmt.Sprintf("replica-%d", fo.next), fo.profile))
	fo.next++
}

func (fo *failover) round(k int) {
	w := fo.w
	w.t.Helper()
	var leading *devenv.Process
	if err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		leading = leader(fo.replicas...)
		return leading != nil, nil
	}); err != nil {
		w.t.Fatal("no replica holds the Lease")
	}
	holder, _ := fo.lease()
	members, gated := fo.burstMembers(k)
	// Each gang's last member is created behind a scheduling gate and released later, in a
	// random order: until then the gang's other members wait at Permit, nominated.
	pauses := make([]time.Duration, len(gated))
	total := time.Duration(len(members)) * killPace
	for i := range pauses {
		pauses[i] = 50*time.Millisecond + time.Duration(fo.rng.Int63n(int64(200*time.Millisecond)))
		total += pauses[i]
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fo.createBurst(members, gated)
		for i, name := range gated {
			time.Sleep(pauses[i])
			fo.ungate(name)
		}
	}()
	delay := time.Duration(fo.rng.Int63n(int64(total)))
	time.Sleep(delay)
	nominated := fo.nominatedDomains()
	leading.Kill()
	killedAt := time.Now()
	w.t.Logf("kill %d: %s at %v into the burst, %d gangs forming", k+1, leading.LogPath, delay.Round(time.Millisecond), len(nominated))
	fo.start()
	<-done
	w.waitAllBound()
	newHolder, acquired := fo.lease()
	if newHolder == holder || acquired.IsZero() {
		w.t.Fatalf("kill %d: the Lease stayed with %q", k+1, holder)
	}
	fo.takeover = append(fo.takeover, acquired.Sub(killedAt))
	fo.record(nominated, acquired)
	if v, err := devenv.Violations(w.ctx, w.cp.Client, w.cp.PodGroups, domainKey, time.Nanosecond, w.ns); err != nil || len(v) > 0 {
		w.t.Fatalf("kill %d: %v %s", k+1, err, strings.Join(v, "\n"))
	}
	fo.clear()
}

type burstMember struct{ gang, pod string }

// burstMembers creates round k's PodGroups and returns their members in a random order, and
// the last member of each gang in that order (they are created gated), in a random order.
func (fo *failover) burstMembers(k int) ([]burstMember, []string) {
	w := fo.w
	var members []burstMember
	for g := 0; g < killGangs; g++ {
		name := fmt.Sprintf("k%02d-g%02d", k, g)
		if _, err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).Create(w.ctx, devenv.NewPodGroup(w.ns, name, killGangSize, domainKey, 120), metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
		for i := 0; i < killGangSize; i++ {
			members = append(members, burstMember{name, fmt.Sprintf("%s-%d", name, i)})
		}
	}
	fo.rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	last := map[string]string{}
	for _, m := range members {
		last[m.gang] = m.pod
	}
	gated := slices.Sorted(maps.Values(last))
	fo.rng.Shuffle(len(gated), func(i, j int) { gated[i], gated[j] = gated[j], gated[i] })
	return members, gated
}

// createBurst creates the members one every killPace, the gated ones behind a gate.
func (fo *failover) createBurst(members []burstMember, gated []string) {
	w := fo.w
	for _, m := range members {
		s := devenv.PodSpec{Namespace: w.ns, Name: m.pod, Group: m.gang, GPUs: 1, Apart: true}
		if slices.Contains(gated, m.pod) {
			s.Gates = []string{"example.com/later"}
		}
		p := devenv.NewPod(s)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		if _, err := w.cp.Client.CoreV1().Pods(w.ns).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
			w.t.Errorf("create %s: %v", m.pod, err)
		}
		time.Sleep(killPace)
	}
}

// ungate removes the pod's scheduling gate.
func (fo *failover) ungate(name string) {
	w := fo.w
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := w.cp.Client.CoreV1().Pods(w.ns).Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.SchedulingGates = nil
		_, err = w.cp.Client.CoreV1().Pods(w.ns).Update(w.ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.t.Errorf("ungate %s: %v", name, err)
	}
}

// nominatedDomains maps the gangs forming now (a member nominated and not bound) to the
// domain of their nominated nodes.
func (fo *failover) nominatedDomains() map[string]string {
	out := map[string]string{}
	for _, p := range fo.w.livePods() {
		if g := p.Labels[devenv.PodGroupLabel]; g != "" && p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" {
			out[g] = nodeDomain(p.Status.NominatedNodeName)
		}
	}
	return out
}

// nodeDomain is the domain of a node of world.domains (named d<domain>-<i>).
func nodeDomain(node string) string {
	d, _, _ := strings.Cut(node, "-")
	return d
}

// lease returns the scheduler Lease's holder and when it acquired it.
func (fo *failover) lease() (string, time.Time) {
	list, err := fo.w.cp.Client.CoordinationV1().Leases(leaseNamespace).List(fo.w.ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		fo.w.t.Fatalf("want one Lease in %s: %v", leaseNamespace, err)
	}
	l := list.Items[0]
	var at time.Time
	if l.Spec.AcquireTime != nil {
		at = l.Spec.AcquireTime.Time
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), at
}

// record scores the gangs that were forming at the kill.
func (fo *failover) record(nominated map[string]string, acquired time.Time) {
	byGang := map[string][]*v1.Pod{}
	for _, p := range fo.w.livePods() {
		if g := p.Labels[devenv.PodGroupLabel]; g != "" {
			byGang[g] = append(byGang[g], p)
		}
	}
	for g, domain := range nominated {
		fo.forming++
		var last time.Time
		kept := len(byGang[g]) > 0
		for _, p := range byGang[g] {
			at, node, ok := fo.pw.boundAt(p.UID)
			kept = kept && ok && nodeDomain(node) == domain
			if at.After(last) {
				last = at
			}
		}
		if kept {
			fo.kept++
		}
		if last.Before(acquired) {
			fo.boundBeforeLease++ // bound by the old leader's binding cycles in flight
			continue
		}
		fo.resume = append(fo.resume, last.Sub(acquired))
	}
}

// clear force-deletes the round's pods and PodGroups and waits until they are gone.
func (fo *failover) clear() {
	w := fo.w
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := w.cp.Client.CoreV1().Pods(w.ns).DeleteCollection(w.ctx, zero, metav1.ListOptions{}); err != nil {
		w.t.Fatal(err)
	}
	if err := w.cp.PodGroups.SchedulingV1alpha1().PodGroups(w.ns).DeleteCollection(w.ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		w.t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := w.cp.Client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	}); err != nil {
		w.t.Fatal("the round's pods are not gone after 30 s")
	}
}

func (fo *failover) report(t *testing.T) {
	t.Helper()
	slices.Sort(fo.resume)
	slices.Sort(fo.takeover)
	share := "-"
	if fo.forming > 0 {
		share = fmt.Sprintf("%d/%d (%.0f %%)", fo.kept, fo.forming, 100*float64(fo.kept)/float64(fo.forming))
	}
	t.Logf("failover: %d kills, kill -> new Lease p50 %v, max %v; gangs forming at a kill %d, kept their domain %s; "+
		"new Lease -> resumed gang bound p50 %v, p99 %v, max %v (%d gangs; %d bound before the new Lease); 0 split, 0 half-bound",
		len(fo.takeover), durationPercentile(fo.takeover, 0.5).Round(time.Millisecond), durationPercentile(fo.takeover, 1).Round(time.Millisecond),
		fo.forming, share, durationPercentile(fo.resume, 0.5).Round(time.Millisecond), durationPercentile(fo.resume, 0.99).Round(time.Millisecond),
		durationPercentile(fo.resume, 1).Round(time.Millisecond), len(fo.resume), fo.boundBeforeLease)
	if os.Getenv("OME_FAILOVER_KEEP") == "1" && fo.kept != fo.forming {
		t.Errorf("%s gangs forming at a kill kept their domain", share)
	}
}
