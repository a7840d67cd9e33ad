package sidebyside

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// Failover mode (SBS_FAILOVER=1): both ome-scheduler configurations run with leader election
// on (Lease kube-system/ome-scheduler, kube-scheduler's default 15 s lease, 10 s renew
// deadline, 2 s retry), and the Lease exists before the scheduler starts, held by a leader
// that has just renewed it and then died (departedLeader). The scheduler starts its
// informers and syncs them as a standby (kube-scheduler does so before it campaigns, unless
// delayCacheUntilActive is set, which neither configuration sets), takes the Lease once the
// departed leader's term has run out, and schedules the backlog. Every SBS_FORMING_EVERY-th
// gang (4) is forming at the change: all its members but one carry the nominatedNodeName the
// departed leader's nomination PATCH left (kube-scheduler's NominatedNodeNameForExpectation,
// on by default), on nodes of one clique. Recorded: when the scheduler's informers had synced
// (/readyz/sched-handler-sync first answers), the Lease's spec.acquireTime, the first and the
// last bind after it, and how many forming gangs bound whole in the clique they were
// nominated in.

const departedLeader = "departed-leader"

// leaseName is the Lease both configurations campaign for, in kube-system.
const leaseName = devenv.SchedulerName

// departLease creates the Lease as a leader that renewed it just now and died.
func departLease(ctx context.Context, cp *devenv.ControlPlane) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: leaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(departedLeader), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now},
	}
	_, err := cp.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Create(ctx, lease, metav1.CreateOptions{})
	return err
}

// formingGang reports whether gang i is forming at the leader change.
func (s scenario) formingGang(i int) bool { return s.formingEvery > 0 && i%s.formingEvery == 0 }

// nodeOfPod is the node the backlog's k-th pod fills when the gangs tile the nodes in order
// (gang i's members are pods i*gang … i*gang+gang-1): the node a forming member is nominated
// to. A clique's GPUs are a multiple of the gang size (readParams checks it), so a forming
// gang's nodes are in one clique.
func (s scenario) nodeOfPod(k int) string { return nodeName(k / s.gpusPerNode) }

// nominateForming sets the nominatedNodeName of every member but the last of the forming
// gangs, as the departed leader's nomination PATCH left it, and returns the clique each
// forming gang was nominated in.
func nominateForming(ctx context.Context, cp *devenv.ControlPlane, sc scenario, cliqueOf map[string]string) (map[string]string, error) {
	gangs := sc.pods() / sc.gang
	nominated := map[string]string{}
	var pods []int
	for i := 0; i < gangs; i++ {
		if sc.formingGang(i) {
			nominated[gangName(i)] = cliqueOf[sc.nodeOfPod(i*sc.gang)]
			for m := 0; m < sc.gang-1; m++ {
				pods = append(pods, i*sc.gang+m)
			}
		}
	}
	err := parallel(ctx, len(pods), func(ctx context.Context, j int) error {
		k := pods[j]
		name := fmt.Sprintf("%s-%d", gangName(k/sc.gang), k%sc.gang)
		pod, err := cp.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.NominatedNodeName = sc.nodeOfPod(k)
		_, err = cp.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	return nominated, err
}

// watchSync records when the scheduler's handlers first report synced (/readyz/sched-handler-sync).
func (p *schedProc) watchSync(ctx context.Context) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := p.get(ctx, "/readyz/sched-handler-sync"); err == nil {
				out <- time.Now()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// leaseAcquired returns the Lease's acquireTime once a holder other than the departed leader has it.
func leaseAcquired(ctx context.Context, cp *devenv.ControlPlane) (time.Time, error) {
	lease, err := cp.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, err
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h == departedLeader || lease.Spec.AcquireTime == nil {
		return time.Time{}, fmt.Errorf("lease %s/%s still held by %s", metav1.NamespaceSystem, leaseName, departedLeader)
	}
	return lease.Spec.AcquireTime.Time, nil
}

// failoverResult is what failover mode adds to a case's result.
type failoverResult struct {
	synced, acquired     time.Time // the handlers synced; the Lease acquired
	forming, formingKept int       // forming gangs; those bound whole in their nominated clique
}

// failoverColumns replace the throughput columns in failover mode. Times are from the Lease's
// acquireTime, except the informer sync (from the process's start).
var failoverColumns = []column{
	{head: "Pods", format: "%.0f", value: func(r result) float64 { return float64(r.pods) }},
	{head: "Start → informers synced (s)", format: "%.2f", value: func(r result) float64 { return r.fo.synced.Sub(r.startedAt).Seconds() }},
	{head: "Start → Lease (s)", format: "%.1f", value: func(r result) float64 { return r.fo.acquired.Sub(r.startedAt).Seconds() }},
	{head: "Lease → first bind (s)", format: "%.2f", value: func(r result) float64 { return r.firstAt.Sub(r.fo.acquired).Seconds() }, ratio: true},
	{head: "Lease → all bound (s)", format: "%.1f", value: func(r result) float64 { return r.lastAt.Sub(r.fo.acquired).Seconds() }, ratio: true},
	{head: "Pods/s", format: "%.1f", value: result.podsPerSec, ratio: true},
	{head: "Forming gangs kept their clique", format: "%.0f", value: func(r result) float64 { return float64(r.fo.formingKept) }},
	{head: "Peak RSS (MiB)", format: "%.0f", value: func(r result) float64 { return r.hwmMiB }, ratio: true},
	{head: "Gangs split", format: "%.0f", value: func(r result) float64 { return float64(r.splits) }},
}

// formingKept counts the forming gangs with bound members, all in their nominated clique.
func formingKept(nominated map[string]string, node, gang map[string]string, cliqueOf map[string]string) int {
	bound, moved := map[string]bool{}, map[string]bool{}
	for pod, n := range node {
		g := gang[pod]
		if want, forming := nominated[g]; forming {
			bound[g] = true
			moved[g] = moved[g] || cliqueOf[n] != want
		}
	}
	count := 0
	for g := range bound {
		if !moved[g] {
			count++
		}
	}
	return count
}

// failoverNote explains the failover table.
func failoverNote(p params) string {
	return strings.Join([]string{
		fmt.Sprintf("Failover mode: the Lease kube-system/%s was held by a departed leader that renewed it just before the scheduler started (lease 15 s); ", leaseName),
		fmt.Sprintf("every %d-th gang was forming (all its members but one nominated in one clique). ", p.formingEvery),
		"Times from the new leader's Lease acquireTime; the informer sync from the process's start (it happens before the campaign).\n",
	}, "")
}

// failoverFill records the informer sync, the Lease's acquisition and the forming gangs kept.
func failoverFill(ctx context.Context, cp *devenv.ControlPlane, res *result, synced <-chan time.Time, nominated map[string]string,
	w *binds, cliqueOf map[string]string) error {
	acquired, err := leaseAcquired(ctx, cp)
	if err != nil {
		return err
	}
	res.fo.acquired = acquired
	select {
	case res.fo.synced = <-synced:
	default:
		return fmt.Errorf("the scheduler's /readyz/sched-handler-sync never answered")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res.fo.forming = len(nominated)
	res.fo.formingKept = formingKept(nominated, w.node, w.gang, cliqueOf)
	return nil
}
