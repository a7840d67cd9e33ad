// Command benchtable turns scheduler_perf's JSON data items
// (BenchmarkPerfScheduling_benchmark_ome_<timestamp>.json) into Markdown tables:
// SchedulingThroughput average / p50 / p90, the pod scheduling SLI latency and the Permit
// wait per workload and scheduler, OMEGangPack's own time per extension point, the
// throughput ratios B/A and B/C, and the observer's placement quality
// (observer_*.json in the same directory: per-gang latency, splits, offline best fit,
// stranded GPUs, peak RSS).
//
//	go run ./test/bench/benchtable [file.json | dir]   (dir: newest BenchmarkPerfScheduling*.json)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moirai-internal/ome-scheduler/test/bench/observation"
)

type dataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

type dataItems struct {
	DataItems []dataItem `json:"dataItems"`
}

type row struct {
	testCase, size string
	runs           int
	throughput     map[string][]float64 // metric data key -> one value per run
	sli            map[string][]float64
	permit         map[string][]float64
	attempt        map[string][]float64
	plugin         map[string]map[string][]float64 // extension point -> data (OMEGangPack)
}

func appendRun(m map[string][]float64, data map[string]float64) map[string][]float64 {
	if m == nil {
		m = map[string][]float64{}
	}
	for k, v := range data {
		m[k] = append(m[k], v)
	}
	return m
}

// spread is "min–max" of the runs' values, or "" for fewer than two runs.
func spread(vs []float64) string {
	if len(vs) < 2 {
		return ""
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	return f1(s[0]) + "–" + f1(s[len(s)-1])
}

// median of the runs' values (the lower middle one for an even count).
func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	return s[(len(s)-1)/2]
}

func main() {
	arg := "."
	if len(os.Args) > 1 {
		arg = os.Args[1]
	}
	files, err := resolve(arg)
	if err != nil {
		fail(err)
	}
	var items dataItems
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			fail(err)
		}
		var run dataItems
		if err := json.Unmarshal(raw, &run); err != nil {
			fail(fmt.Errorf("%s: %w", file, err))
		}
		items.DataItems = append(items.DataItems, run.DataItems...)
	}
	rows := map[string]*row{}
	var keys []string
	for _, it := range items.DataItems {
		// Name is BenchmarkPerfScheduling/<testcase>/<workload>/<namespace>.
		parts := strings.Split(strings.TrimPrefix(it.Labels["Name"], "BenchmarkPerfScheduling/"), "/")
		if len(parts) < 2 || it.Data == nil {
			continue
		}
		key := parts[0] + "/" + parts[1]
		r := rows[key]
		if r == nil {
			r = &row{testCase: parts[0], size: parts[1], plugin: map[string]map[string][]float64{}}
			rows[key] = r
			keys = append(keys, key)
		}
		switch it.Labels["Metric"] {
		case "SchedulingThroughput":
			r.throughput = appendRun(r.throughput, it.Data)
			r.runs++
		case "scheduler_pod_scheduling_sli_duration_seconds":
			r.sli = appendRun(r.sli, it.Data)
		case "scheduler_permit_wait_duration_seconds":
			r.permit = appendRun(r.permit, it.Data)
		case "scheduler_scheduling_attempt_duration_seconds":
			if it.Labels["result"] == "scheduled" {
				r.attempt = appendRun(r.attempt, it.Data)
			}
		case "scheduler_plugin_execution_duration_seconds":
			if it.Labels["plugin"] == "OMEGangPack" {
				ep := it.Labels["extension_point"]
				r.plugin[ep] = appendRun(r.plugin[ep], it.Data)
			}
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		wi, si := split(rows[keys[i]].testCase)
		wj, sj := split(rows[keys[j]].testCase)
		if wi != wj {
			return wi > wj // Standalone before Gang4
		}
		if rows[keys[i]].size != rows[keys[j]].size {
			return rows[keys[i]].size < rows[keys[j]].size
		}
		return si < sj
	})
	fmt.Printf("Results from %s (median over runs)\n\n", strings.Join(files, ", "))
	fmt.Println("| Workload | Size | Scheduler | Runs | Throughput avg (pods/s) | Spread over runs | Throughput p50 | Throughput p90 | Attempt p99 (ms) | SLI p50 (ms) | SLI p99 (ms) | Permit wait p99 (ms) |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range keys {
		r := rows[k]
		w, s := split(r.testCase)
		tp, sp, p50, p90 := "n/a (run < 2 s)", "", "", ""
		if r.throughput != nil {
			tp = f1(median(r.throughput["Average"]))
			sp = spread(r.throughput["Average"])
			p50 = f1(median(r.throughput["Perc50"]))
			p90 = f1(median(r.throughput["Perc90"]))
		}
		fmt.Printf("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, r.size, s, r.runs, tp, sp, p50, p90,
			get(r.attempt, "Perc99"), get(r.sli, "Perc50"), get(r.sli, "Perc99"), get(r.permit, "Perc99"))
	}
	printRatios(rows, keys)
	printQuality(filepath.Dir(files[0]))
	points := []string{"PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit", "Bind", "PostBind"}
	fmt.Println()
	fmt.Println("OMEGangPack plugin execution time, average per call in ms (scheduler_plugin_execution_duration_seconds; the scheduler samples ~10% of cycles):")
	fmt.Println()
	fmt.Println("| Workload | Size | " + strings.Join(points, " | ") + " |")
	fmt.Println("|---|---|" + strings.Repeat("---:|", len(points)))
	for _, k := range keys {
		r := rows[k]
		if len(r.plugin) == 0 {
			continue
		}
		w, _ := split(r.testCase)
		cells := make([]string, len(points))
		for i, p := range points {
			cells[i] = get(r.plugin[p], "Average")
		}
		fmt.Printf("| %s | %s | %s |\n", w, r.size, strings.Join(cells, " | "))
	}
}

// printRatios prints B/A and B/C of the average throughput per workload and size.
func printRatios(rows map[string]*row, keys []string) {
	type key struct{ w, size string }
	avg := map[key]map[string]float64{}
	var order []key
	for _, k := range keys {
		r := rows[k]
		if r.throughput == nil {
			continue
		}
		w, s := split(r.testCase)
		kk := key{w, r.size}
		if avg[kk] == nil {
			avg[kk] = map[string]float64{}
			order = append(order, kk)
		}
		avg[kk][s[:1]] = median(r.throughput["Average"])
	}
	fmt.Println()
	fmt.Println("| Workload | Size | B/A throughput | B/C throughput |")
	fmt.Println("|---|---|---:|---:|")
	for _, k := range order {
		a, b, c := avg[k]["A"], avg[k]["B"], avg[k]["C"]
		fmt.Printf("| %s | %s | %s | %s |\n", k.w, k.size, ratio(b, a), ratio(b, c))
	}
}

// heading prints a blank line, a title paragraph, a blank line and a Markdown table header.
func heading(title, header, align string) {
	fmt.Printf("\n%s\n\n%s\n%s\n", title, header, align)
}

// caseOf splits BenchmarkPerfScheduling/<workload>_<scheduler>/<size> into its parts.
func caseOf(name string) (workload, size, scheduler string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(name, "BenchmarkPerfScheduling/"), "/")
	if len(parts) < 2 {
		return "", "", "", false
	}
	workload, scheduler = split(parts[0])
	return workload, parts[1], scheduler, true
}

func ratio(x, y float64) string {
	if x == 0 || y == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f %%", 100*x/y)
}

func printQuality(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "observer_*.json"))
	var obs []observation.Result
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		var o observation.Result
		if err := json.Unmarshal(raw, &o); err != nil {
			fail(fmt.Errorf("%s: %w", f, err))
		}
		obs = append(obs, o)
	}
	if len(obs) == 0 {
		return
	}
	printBurst(obs)
	printRepair(obs)
	obs = aggregate(obs)
	heading("Placement quality and memory, median over runs (observer: gang latency = last member created -> last member bound; offline best fit = live gangs a sequential best fit places whole; stranded = free GPUs in domains that cannot host the smallest gang; RSS = whole test process: API server + scheduler + load generator):",
		"| Workload | Size | Scheduler | Runs | Pods bound | Gangs | Placed | Split (worst run) | Partial (worst run) | Live whole / offline best fit | Gang p50 (ms) | Gang p99 (ms) | Gang max (ms) | Free GPUs | Stranded GPUs | Peak RSS (MiB) |",
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, o := range obs {
		w, size, s, ok := caseOf(o.Name)
		if !ok {
			continue
		}
		fmt.Printf("| %s | %s | %s | %d | %d/%d | %d | %d | %d | %d | %d / %d | %.0f | %.0f | %.0f | %d | %d | %.0f |\n",
			w, size, s, o.Runs, o.PodsBound, o.Pods, o.Gangs, o.GangsPlaced, o.GangsSplit, o.GangsPartial,
			o.LiveGangsWhole, o.OfflineBestFit, o.LatencyP50ms, o.LatencyP99ms, o.LatencyMaxms,
			o.FreeGPUs, o.StrandedGPUs, o.PeakRSSMiB)
	}

	printPreemption(obs)
	printGroups(obs)

	heading("Gangs created one at a time (namespaces seq-*, each after the previous one is bound): last member created -> last member bound, and scheduling attempts (scheduler_schedule_attempts_total by result; OMEGangPack activations by trigger; opportunistic batching attempts by result):",
		"| Workload | Size | Scheduler | One-at-a-time gangs | p50 (ms) | p99 (ms) | max (ms) | Attempts per pod | scheduled | unschedulable | error | Activations, batching |",
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, o := range obs {
		w, size, s, ok := caseOf(o.Name)
		if !ok {
			continue
		}
		c := o.Counters
		sched, unsched, errs := c["scheduler_schedule_attempts_total/scheduled"], c["scheduler_schedule_attempts_total/unschedulable"], c["scheduler_schedule_attempts_total/error"]
		perPod := ""
		if o.Pods > 0 {
			perPod = fmt.Sprintf("%.2f", (sched+unsched+errs)/float64(o.Pods))
		}
		var acts []string
		for k, v := range c {
			if t, ok := strings.CutPrefix(k, "ome_scheduler_gang_activation_total/"); ok && v > 0 {
				acts = append(acts, fmt.Sprintf("%s %.0f", t, v))
			}
			if t, ok := strings.CutPrefix(k, "scheduler_batch_attempts_total/"); ok && v > 0 {
				acts = append(acts, fmt.Sprintf("batch %s %.0f", t, v))
			}
		}
		sort.Strings(acts)
		seq := []string{"", "", "", ""}
		if o.SeqGangs > 0 {
			seq = []string{fmt.Sprint(o.SeqGangs), fmt.Sprintf("%.0f", o.SeqP50ms), fmt.Sprintf("%.0f", o.SeqP99ms), fmt.Sprintf("%.0f", o.SeqMaxms)}
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %s |\n", w, size, s, strings.Join(seq, " | "),
			perPod, sched, unsched, errs, strings.Join(acts, ", "))
	}
}

// printPreemption prints the preemption workload's table when a workload had preemptors.
func printPreemption(obs []observation.Result) {
	found := false
	for _, o := range obs {
		found = found || o.PreemptorGangs > 0
	}
	if !found {
		return
	}
	heading("Preemption (workload Preempt: cliques full of low-priority gangs, then high-priority gangs in namespace prio-high): preemptor gangs' last member created -> last member bound; preemptions and victims from the scheduler's counters (OMEGangPack: ome_scheduler_preemption_total{preempted}, victim units; DefaultPreemption: scheduler_preemption_victims count and sum); bound members deleted by the observer: gangs touched, gangs left partly evicted, members evicted, GPUs still held by the partly evicted gangs' survivors:",
		"| Workload | Size | Scheduler | Preemptor gangs | p50 (ms) | p99 (ms) | max (ms) | Preemptions | Victim gangs / pods per preemption | Gangs evicted | Partly evicted | Members evicted | GPUs held by survivors | Preemptor gangs split |",
		"|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
	for _, o := range obs {
		w, size, s, ok := caseOf(o.Name)
		if !ok || o.PreemptorGangs == 0 {
			continue
		}
		c := o.Counters
		var n float64
		var per string
		if ome := c["ome_scheduler_preemption_total/gang/preempted"] + c["ome_scheduler_preemption_total/pod/preempted"]; ome > 0 {
			n = ome
			gangs, pods := c["ome_scheduler_preemption_victims_total/gang"], c["ome_scheduler_preemption_victims_total/pod"]
			per = fmt.Sprintf("%.2f gangs (%.2f members), %.2f pods", gangs/n, float64(o.MembersEvicted)/n, pods/n)
		} else if dp := c["scheduler_preemption_victims/count"]; dp > 0 {
			n = dp
			per = fmt.Sprintf("%.2f pods", c["scheduler_preemption_victims/sum"]/n)
		}
		fmt.Printf("| %s | %s | %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %d | %d | %d | %d | %d |\n",
			w, size, s, o.PreemptorGangs, o.PreemptorP50ms, o.PreemptorP99ms, o.PreemptorMaxms, n, per,
			o.GangsEvicted, o.GangsPartlyEvicted, o.MembersEvicted, o.PartlyEvictedHeldGPUs, o.PreemptorGangsSplit)
	}
}

// printBurst prints the burst workload's table, one row per run (in the order of the observer
// files, which is the order the runs ended in) and the median over each case's runs, when a
// workload had pods in namespace burst.
func printBurst(obs []observation.Result) {
	byName := map[string][]observation.Result{}
	var names []string
	for _, o := range obs {
		if o.BurstPods == 0 {
			continue
		}
		if byName[o.Name] == nil {
			names = append(names, o.Name)
		}
		byName[o.Name] = append(byName[o.Name], o)
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	heading("Burst (workload Burst: cliques about 90 % full of standalone pods, then gangs of 2, 4 and 8 created at once, namespace burst, while the standalone pods are deleted): from the burst pods' bind times, run = first burst pod created -> last bound, mean = bound / run, worst window = the 10 consecutive whole seconds with the fewest binds (target: worst / mean >= 0.2); gangs placed, split, partial and gang latency over the burst's gangs:",
		"| Workload | Size | Scheduler | Run | Burst pods bound | Run (s) | Mean (pods/s) | Worst 10 s window (pods/s) | Window starts at (s) | Worst / mean | Gangs placed | Split | Partial | Gang p50 (ms) | Gang p99 (ms) |",
		"|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	row := func(w, size, s, run string, o observation.Result) {
		worst, at, frac := "—", "—", "— (run < 10 s)"
		if o.BurstWindows > 0 {
			worst, at, frac = f1(o.BurstWorstWindowPerSecond), fmt.Sprint(o.BurstWorstWindowAtSecond), fmt.Sprintf("%.2f", o.BurstWorstWindowFraction)
		}
		fmt.Printf("| %s | %s | %s | %s | %d/%d | %.1f | %.1f | %s | %s | %s | %d/%d | %d | %d | %.0f | %.0f |\n",
			w, size, s, run, o.BurstBound, o.BurstPods, o.BurstRunSeconds, o.BurstMeanPerSecond, worst, at, frac,
			o.GangsPlaced, o.Gangs, o.GangsSplit, o.GangsPartial, o.LatencyP50ms, o.LatencyP99ms)
	}
	for _, n := range names {
		w, size, s, ok := caseOf(n)
		if !ok {
			continue
		}
		runs := byName[n]
		for i, o := range runs {
			row(w, size, s, fmt.Sprint(i+1), o)
		}
		if len(runs) < 2 {
			continue
		}
		m := aggregate(runs)[0]
		fracs := make([]float64, 0, len(runs))
		for _, o := range runs {
			if o.BurstWindows > 0 {
				fracs = append(fracs, o.BurstWorstWindowFraction)
			}
		}
		if len(fracs) > 0 {
			sort.Float64s(fracs)
			fmt.Printf("| %s | %s | %s | lowest worst / mean of %d runs: **%.2f** | | | | | | | | | | | |\n", w, size, s, len(runs), fracs[0])
		}
		row(w, size, s, "median", m)
	}
}

// printGroups prints the placement group workloads' table when a workload had would-be
// groups (pods labelled bench.ome.io/placement-group).
func printGroups(obs []observation.Result) {
	found := false
	for _, o := range obs {
		found = found || o.Groups > 0
	}
	if !found {
		return
	}
	heading("Placement groups (workloads Partners*: pairs of gangs of 2 and of 4; Partners declares them as placement groups, PartnersIndependent places the same gangs on their own): per group last member created -> last member bound; groups apart = groups whose bound members span more than one clique (worst run); gangs split (worst run):",
		"| Workload | Size | Scheduler | Groups | Placed | p50 (ms) | p99 (ms) | max (ms) | Groups apart | Gangs split | placement_group_total |",
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, o := range obs {
		w, size, s, ok := caseOf(o.Name)
		if !ok || o.Groups == 0 {
			continue
		}
		var results []string
		for k, v := range o.Counters {
			if r, ok := strings.CutPrefix(k, "ome_scheduler_placement_group_total/"); ok && v > 0 {
				results = append(results, fmt.Sprintf("%s %.0f", r, v))
			}
		}
		sort.Strings(results)
		fmt.Printf("| %s | %s | %s | %d | %d | %.0f | %.0f | %.0f | %d | %d | %s |\n",
			w, size, s, o.Groups, o.GroupsPlaced, o.GroupP50ms, o.GroupP99ms, o.GroupMaxms, o.GroupsApart, o.GangsSplit, strings.Join(results, ", "))
	}
}

// aggregate folds the runs of each workload into one observation: the median of every
// figure, except splits and partial gangs, which are the worst run's (B must split none in
// any run). Runs holds how many runs were folded.
func aggregate(obs []observation.Result) []observation.Result {
	byName := map[string][]observation.Result{}
	var names []string
	for _, o := range obs {
		if byName[o.Name] == nil {
			names = append(names, o.Name)
		}
		byName[o.Name] = append(byName[o.Name], o)
	}
	sort.Strings(names)
	out := make([]observation.Result, 0, len(names))
	for _, n := range names {
		runs := byName[n]
		f := func(get func(observation.Result) float64) float64 {
			vs := make([]float64, len(runs))
			for i, o := range runs {
				vs[i] = get(o)
			}
			return median(vs)
		}
		worst := func(get func(observation.Result) int) int {
			w := 0
			for _, o := range runs {
				w = max(w, get(o))
			}
			return w
		}
		a := runs[len(runs)-1]
		a.Runs = len(runs)
		a.Pods = int(f(func(o observation.Result) float64 { return float64(o.Pods) }))
		a.PodsBound = int(f(func(o observation.Result) float64 { return float64(o.PodsBound) }))
		a.GangsPlaced = int(f(func(o observation.Result) float64 { return float64(o.GangsPlaced) }))
		a.GangsSplit = worst(func(o observation.Result) int { return o.GangsSplit })
		a.GangsPartial = worst(func(o observation.Result) int { return o.GangsPartial })
		a.LiveGangsWhole = int(f(func(o observation.Result) float64 { return float64(o.LiveGangsWhole) }))
		a.OfflineBestFit = int(f(func(o observation.Result) float64 { return float64(o.OfflineBestFit) }))
		a.LatencyP50ms = f(func(o observation.Result) float64 { return o.LatencyP50ms })
		a.LatencyP99ms = f(func(o observation.Result) float64 { return o.LatencyP99ms })
		a.LatencyMaxms = f(func(o observation.Result) float64 { return o.LatencyMaxms })
		a.SeqP50ms = f(func(o observation.Result) float64 { return o.SeqP50ms })
		a.SeqP99ms = f(func(o observation.Result) float64 { return o.SeqP99ms })
		a.SeqMaxms = f(func(o observation.Result) float64 { return o.SeqMaxms })
		a.PreemptorP50ms = f(func(o observation.Result) float64 { return o.PreemptorP50ms })
		a.PreemptorP99ms = f(func(o observation.Result) float64 { return o.PreemptorP99ms })
		a.PreemptorMaxms = f(func(o observation.Result) float64 { return o.PreemptorMaxms })
		a.GangsPartlyEvicted = worst(func(o observation.Result) int { return o.GangsPartlyEvicted })
		a.PreemptorGangsSplit = worst(func(o observation.Result) int { return o.PreemptorGangsSplit })
		a.GroupsPlaced = int(f(func(o observation.Result) float64 { return float64(o.GroupsPlaced) }))
		a.GroupsApart = worst(func(o observation.Result) int { return o.GroupsApart })
		a.GroupP50ms = f(func(o observation.Result) float64 { return o.GroupP50ms })
		a.GroupP99ms = f(func(o observation.Result) float64 { return o.GroupP99ms })
		a.GroupMaxms = f(func(o observation.Result) float64 { return o.GroupMaxms })
		a.BurstPods = int(f(func(o observation.Result) float64 { return float64(o.BurstPods) }))
		a.BurstBound = int(f(func(o observation.Result) float64 { return float64(o.BurstBound) }))
		a.BurstRunSeconds = f(func(o observation.Result) float64 { return o.BurstRunSeconds })
		a.BurstMeanPerSecond = f(func(o observation.Result) float64 { return o.BurstMeanPerSecond })
		a.BurstWindows = int(f(func(o observation.Result) float64 { return float64(o.BurstWindows) }))
		a.BurstWorstWindowPerSecond = f(func(o observation.Result) float64 { return o.BurstWorstWindowPerSecond })
		a.BurstWorstWindowAtSecond = int(f(func(o observation.Result) float64 { return float64(o.BurstWorstWindowAtSecond) }))
		a.BurstWorstWindowFraction = f(func(o observation.Result) float64 { return o.BurstWorstWindowFraction })
		a.Gangs = int(f(func(o observation.Result) float64 { return float64(o.Gangs) }))
		a.FreeGPUs = int64(f(func(o observation.Result) float64 { return float64(o.FreeGPUs) }))
		a.StrandedGPUs = int64(f(func(o observation.Result) float64 { return float64(o.StrandedGPUs) }))
		a.PeakRSSMiB = f(func(o observation.Result) float64 { return o.PeakRSSMiB })
		a.Counters = map[string]float64{}
		for k := range runs[0].Counters {
			a.Counters[k] = f(func(o observation.Result) float64 { return o.Counters[k] })
		}
		out = append(out, a)
	}
	return out
}

func get(m map[string][]float64, k string) string {
	if m == nil {
		return ""
	}
	vs, ok := m[k]
	if !ok || len(vs) == 0 {
		return ""
	}
	v := median(vs)
	if v < 10 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// split turns "Gang4_B_OME" into ("Gang4", "B_OME").
func split(tc string) (workload, scheduler string) {
	for _, sep := range []string{"_A_", "_B_", "_C_"} {
		if i := strings.Index(tc, sep); i >= 0 {
			return tc[:i], tc[i+1:]
		}
	}
	return tc, ""
}

// resolve returns the data item files: the file given, or every BenchmarkPerfScheduling*.json
// of a directory (one per run; `make bench` empties the directory first).
func resolve(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{arg}, nil
	}
	matches, err := filepath.Glob(filepath.Join(arg, "BenchmarkPerfScheduling*.json"))
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("no BenchmarkPerfScheduling*.json in %s", arg)
	}
	sort.Strings(matches)
	return matches, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
