package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
	"github.com/moirai-internal/ome-scheduler/test/bench/observation"
)

// The observer is the benchmark's own collector for what scheduler_perf does not measure:
// per-gang placement latency, gangs split across domains, gangs placed against an offline
// best fit, stranded capacity and the test process's peak RSS. It runs in the load
// generator (scheduler_perf's prepareFn hook), watches pods and nodes through its own
// informers, and is identical for every profile (A, B, C), so it favours none of them.
// At the end of each workload it writes observer_<testcase>_<workload>.json next to the
// harness's data items; `benchtable` prints them.

const (
	gangLabel = "scheduling.x-k8s.io/pod-group"
	// groupLabel names a pod's would-be placement group for the observer only (workloads
	// Partners and PartnersIndependent); the scheduler never reads it.
	groupLabel = "bench.ome.io/placement-group"
	domainKey  = "nvidia.com/gpu.clique"
	rackKey    = "topology.kubernetes.io/rack"
	gpu        = v1.ResourceName("nvidia.com/gpu")
)

type podRecord struct {
	namespace      string
	gang           string // namespace/pod-group label; "" for standalone pods
	group          string // namespace/groupLabel; "" when the pod has none
	created        time.Time
	bound          time.Time
	node           string
	gpus           int64
	deleted        bool
	deletedAt      time.Time // when the observer first saw the deletion
	deletedUnbound bool
	lastWait       string
}

// waitKey shortens a PodScheduled=False message to its reason: the part after "nodes are
// available: ", with gang keys, domain values and numbers replaced by placeholders, so that
// "no domain has room for gang ...: the best domain ... has room for ..." and "no domain has
// room for gang ...: every fitting domain is reserved ..." count apart.
func waitKey(msg string) string {
	if _, rest, ok := strings.Cut(msg, "nodes are available: "); ok {
		msg = rest
	}
	f := strings.Fields(msg)
	for i, w := range f {
		switch {
		case strings.Contains(w, "/"):
			f[i] = "<gang>"
		case strings.ContainsAny(w, "0123456789"):
			f[i] = "<n>"
		}
	}
	return strings.Join(f[:min(len(f), 16)], " ")
}

type observer struct {
	mu    sync.Mutex
	pods  map[types.UID]*podRecord
	start time.Time

	rssPeak  uint64 // bytes
	hwmReset bool
	counters map[string]float64 // last sample of the scheduler's own counters, less base
	base     map[string]float64 // counterFamilies at the workload's start
	waits    map[string]int     // PodScheduled=False messages seen, by their first words
}

// counterFamilies are the in-process scheduler counters the observer samples, with the
// labels that key them: how many scheduling attempts each pod needed, why OMEGangPack woke
// pods, and preemption (OMEGangPack's decisions and victim units; DefaultPreemption's
// attempts and its victims histogram, whose sum and count are kept). The harness resets the
// registry between workloads, so they cover one workload; they are sampled while it runs
// because the reset happens before the observer's cleanup.
var counterFamilies = map[string][]string{
	"scheduler_schedule_attempts_total":      {"result"},
	"ome_scheduler_gang_activation_total":    {"trigger"},
	"ome_scheduler_gang_unwind_total":        nil,
	"scheduler_batch_attempts_total":         {"result"},
	"ome_scheduler_preemption_total":         {"preemptor", "result"},
	"ome_scheduler_preemption_victims_total": {"unit"},
	"scheduler_preemption_attempts_total":    nil,
	"scheduler_preemption_victims":           nil,
	"ome_scheduler_placement_group_total":    {"result"},
}

// Result is one workload's observation (package observation, shared with benchtable).
type Result = observation.Result

// observe is the harness's prepareFn: it starts the observer for the workload in tCtx.
func observe(tCtx ktesting.TContext) error {
	o := &observer{pods: map[types.UID]*podRecord{}, waits: map[string]int{}, start: time.Now(), base: gatherCounters()}
	// Reset the kernel's peak-RSS mark (VmHWM) so it covers this workload only.
	o.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil

	factory := informers.NewSharedInformerFactory(tCtx.Client(), 0)
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.podSeen(obj.(*v1.Pod)) },
		UpdateFunc: func(_, obj any) { o.podSeen(obj.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				o.podDeleted(pod)
			}
		},
	}); err != nil {
		return err
	}
	nodeLister := factory.Core().V1().Nodes().Lister()
	failure, err := registerNodeFailure(tCtx, factory)
	if err != nil {
		return err
	}
	factory.Start(tCtx.Done())
	factory.WaitForCacheSync(tCtx.Done())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			o.sampleRSS()
			if i%5 == 0 {
				o.sampleCounters()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	name := tCtx.Name()
	// Cleanups run last-in first-out: this one runs after runWorkload's own cleanup
	// cancelled the workload, before the API server is torn down. The informer caches
	// stay readable after the cancel.
	tCtx.TB().Cleanup(func() {
		close(stop)
		wg.Wait()
		o.sampleCounters()
		nodes, err := nodeLister.List(labels.Everything())
		if err != nil {
			tCtx.Errorf("observer: list nodes: %v", err)
			return
		}
		res := o.result(name, nodes)
		res.Repair = failure.result()
		if err := writeResult(res); err != nil {
			tCtx.Errorf("observer: %v", err)
		}
		tCtx.Logf("observer: %+v", res)
	})
	return nil
}

func (o *observer) podSeen(pod *v1.Pod) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.pods[pod.UID]
	if r == nil {
		r = &podRecord{namespace: pod.Namespace, created: now, gpus: devenv.PodGPUs(pod)}
		if g := pod.Labels[gangLabel]; g != "" {
			r.gang = pod.Namespace + "/" + g
		}
		if g := pod.Labels[groupLabel]; g != "" {
			r.group = pod.Namespace + "/" + g
		}
		o.pods[pod.UID] = r
	}
	if r.node == "" && pod.Spec.NodeName != "" {
		r.node, r.bound = pod.Spec.NodeName, now
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != r.lastWait {
			r.lastWait = c.Message
			o.waits[waitKey(c.Message)]++
		}
	}
	if pod.DeletionTimestamp != nil && !r.deleted {
		r.deleted, r.deletedAt, r.deletedUnbound = true, time.Now(), r.node == ""
	}
}

func (o *observer) podDeleted(pod *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r := o.pods[pod.UID]; r != nil && !r.deleted {
		r.deleted, r.deletedAt = true, time.Now()
		r.deletedUnbound = r.node == ""
	}
}

// gatherCounters reads counterFamilies from the in-process registry.
func gatherCounters() map[string]float64 {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil
	}
	got := map[string]float64{}
	for _, mf := range families {
		keys, ok := counterFamilies[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, k := range keys {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k {
						key += "/" + lp.GetValue()
					}
				}
			}
			if h := m.GetHistogram(); h != nil {
				got[key+"/sum"] += h.GetSampleSum()
				got[key+"/count"] += float64(h.GetSampleCount())
				continue
			}
			got[key] += m.GetCounter().GetValue()
		}
	}
	return got
}

// sampleCounters keeps the latest gather taken while the workload's scheduler runs (one
// with scheduler_schedule_attempts_total series: the harness's registry reset removes them),
// minus the values at the workload's start (o.base: metrics without labels, such as
// DefaultPreemption's victims histogram, are not reset between workloads).
func (o *observer) sampleCounters() {
	got := gatherCounters()
	running := false
	for k := range got {
		if strings.HasPrefix(k, "scheduler_schedule_attempts_total/") {
			running = true
			break
		}
	}
	if !running {
		return
	}
	for k, v := range got {
		got[k] = v - o.base[k]
	}
	o.mu.Lock()
	o.counters = got
	o.mu.Unlock()
}

func (o *observer) sampleRSS() {
	rss := selfStatus().VmRSS
	o.mu.Lock()
	o.rssPeak = max(o.rssPeak, rss)
	o.mu.Unlock()
}

// selfStatus reads this process's /proc/self/status; the zero value when unavailable.
func selfStatus() procfs.ProcStatus {
	p, err := procfs.Self()
	if err != nil {
		return procfs.ProcStatus{}
	}
	s, _ := p.NewStatus()
	return s
}

// domainOf is a node's gang domain: its clique, else (the in-tree TAS shape) its rack.
func domainOf(n *v1.Node) string {
	if d := n.Labels[domainKey]; d != "" {
		return d
	}
	return n.Labels[rackKey]
}

func (o *observer) result(name string, nodes []*v1.Node) Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	res := Result{Name: name, RSSSource: "VmRSS sampled every 100 ms", Counters: o.counters, Waits: o.waits}
	res.PeakRSSMiB = float64(o.rssPeak) / (1 << 20)
	if o.hwmReset {
		if hwm := selfStatus().VmHWM; hwm > 0 {
			res.PeakRSSMiB, res.RSSSource = float64(hwm)/(1<<20), "VmHWM (reset at workload start)"
		}
	}

	var cl cluster
	for _, n := range nodes {
		q := n.Status.Allocatable[gpu]
		cl.nodes = append(cl.nodes, nodeCap{name: n.Name, domain: domainOf(n), gpus: q.Value()})
	}
	var recs []podSample
	var burstCreated, burstBound, fillDeleted []time.Time
	for _, r := range o.pods {
		if r.namespace == burstNamespace {
			burstCreated, burstBound = append(burstCreated, r.created), append(burstBound, r.bound)
		}
		if r.namespace == burstFillNamespace && r.deleted {
			fillDeleted = append(fillDeleted, r.deletedAt)
		}
		recs = append(recs, podSample{gang: r.gang, group: r.group, created: r.created, bound: r.bound, node: r.node,
			gpus: r.gpus, deleted: r.deleted, neverBound: r.deletedUnbound})
	}
	q := evaluate(cl, recs)
	res.Pods, res.PodsBound = q.pods, q.podsBound
	res.Gangs, res.GangsPlaced, res.GangsSplit, res.GangsPartial = q.gangs, q.gangsPlaced, q.gangsSplit, q.gangsPartial
	res.LiveGangs, res.LiveGangsWhole, res.OfflineBestFit = q.liveGangs, q.liveGangsWhole, q.offlineBestFit
	res.LatencyP50ms = ms(percentile(q.latencies, 0.50))
	res.LatencyP99ms = ms(percentile(q.latencies, 0.99))
	res.LatencyMaxms = ms(percentile(q.latencies, 1))
	res.SeqGangs = len(q.seqLatencies)
	res.SeqP50ms = ms(percentile(q.seqLatencies, 0.50))
	res.SeqP99ms = ms(percentile(q.seqLatencies, 0.99))
	res.SeqMaxms = ms(percentile(q.seqLatencies, 1))
	res.PreemptorGangs = len(q.preemptorLatencies)
	res.PreemptorP50ms = ms(percentile(q.preemptorLatencies, 0.50))
	res.PreemptorP99ms = ms(percentile(q.preemptorLatencies, 0.99))
	res.PreemptorMaxms = ms(percentile(q.preemptorLatencies, 1))
	res.PreemptorGangsSplit = q.preemptorsSplit
	res.GangsEvicted, res.GangsPartlyEvicted = q.gangsEvicted, q.gangsPartlyEvicted
	res.MembersEvicted, res.PartlyEvictedHeldGPUs = q.podsEvicted, q.partlyEvictedHeldGPUs
	res.FreeGPUs, res.StrandedGPUs = q.freeGPUs, q.strandedGPUs
	res.Groups, res.GroupsPlaced, res.GroupsApart = q.groups, q.groupsPlaced, q.groupsApart
	res.GroupP50ms = ms(percentile(q.groupLatencies, 0.50))
	res.GroupP99ms = ms(percentile(q.groupLatencies, 0.99))
	res.GroupMaxms = ms(percentile(q.groupLatencies, 1))
	if len(burstCreated) > 0 {
		ws := throughputWindows(burstCreated, burstBound, windowSeconds)
		res.BurstPods, res.BurstBound, res.BurstRunSeconds = ws.Pods, ws.Bound, ws.Run.Seconds()
		res.BurstMeanPerSecond, res.BurstWindows = ws.Mean, ws.Windows
		res.BurstWorstWindowPerSecond, res.BurstWorstWindowAtSecond = ws.Worst, ws.WorstAtSeconds
		res.BurstWorstWindowFraction = ws.WorstFraction
		res.BurstBindsPerSecond = binsPerSecond(burstCreated, burstBound)
		res.BurstCreatedPerSecond = binsPerSecond(burstCreated, burstCreated)
		res.BurstFillDeletedPerSecond = binsPerSecond(burstCreated, fillDeleted)
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// resultDir is the harness's -data-items-dir (the current directory when unset).
func resultDir() string {
	if f := flag.Lookup("data-items-dir"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return "."
}

func writeResult(res Result) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	base := strings.ReplaceAll(strings.TrimPrefix(res.Name, "BenchmarkPerfScheduling/"), "/", "_")
	file := filepath.Join(resultDir(), fmt.Sprintf("observer_%s_%d.json", base, time.Now().UnixNano()))
	return os.WriteFile(file, raw, 0o644)
}
