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
	throughput     map[string]float64
	sli            map[string]float64
	permit         map[string]float64
	attempt        map[string]float64
	plugin         map[string]map[string]float64 // extension point -> data (OMEGangPack)
}

func main() {
	arg := "."
	if len(os.Args) > 1 {
		arg = os.Args[1]
	}
	file, err := resolve(arg)
	if err != nil {
		fail(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	var items dataItems
	if err := json.Unmarshal(raw, &items); err != nil {
		fail(fmt.Errorf("%s: %w", file, err))
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
			r = &row{testCase: parts[0], size: parts[1], plugin: map[string]map[string]float64{}}
			rows[key] = r
			keys = append(keys, key)
		}
		switch it.Labels["Metric"] {
		case "SchedulingThroughput":
			r.throughput = it.Data
		case "scheduler_pod_scheduling_sli_duration_seconds":
			r.sli = it.Data
		case "scheduler_permit_wait_duration_seconds":
			r.permit = it.Data
		case "scheduler_scheduling_attempt_duration_seconds":
			if it.Labels["result"] == "scheduled" {
				r.attempt = it.Data
			}
		case "scheduler_plugin_execution_duration_seconds":
			if it.Labels["plugin"] == "OMEGangPack" {
				r.plugin[it.Labels["extension_point"]] = it.Data
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
	fmt.Printf("Results from %s\n\n", file)
	fmt.Println("| Workload | Size | Scheduler | Throughput avg (pods/s) | Throughput p50 | Throughput p90 | Attempt p99 (ms) | SLI p50 (ms) | SLI p99 (ms) | Permit wait p99 (ms) |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range keys {
		r := rows[k]
		w, s := split(r.testCase)
		tp, p50, p90 := "n/a (run < 2 s)", "", ""
		if r.throughput != nil {
			tp = f1(r.throughput["Average"])
			p50 = f1(r.throughput["Perc50"])
			p90 = f1(r.throughput["Perc90"])
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, r.size, s, tp, p50, p90,
			get(r.attempt, "Perc99"), get(r.sli, "Perc50"), get(r.sli, "Perc99"), get(r.permit, "Perc99"))
	}
	printRatios(rows, keys)
	printQuality(filepath.Dir(file))
	points := []string{"PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit", "PostBind"}
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
		avg[kk][s[:1]] = r.throughput["Average"]
	}
	fmt.Println()
	fmt.Println("| Workload | Size | B/A throughput | B/C throughput |")
	fmt.Println("|---|---|---:|---:|")
	for _, k := range order {
		a, b, c := avg[k]["A"], avg[k]["B"], avg[k]["C"]
		fmt.Printf("| %s | %s | %s | %s |\n", k.w, k.size, ratio(b, a), ratio(b, c))
	}
}

func ratio(x, y float64) string {
	if x == 0 || y == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f %%", 100*x/y)
}

// observation is what test/bench/observe.go writes per workload.
type observation struct {
	Name           string  `json:"name"`
	Pods           int     `json:"pods"`
	PodsBound      int     `json:"podsBound"`
	Gangs          int     `json:"gangs"`
	GangsPlaced    int     `json:"gangsPlaced"`
	GangsSplit     int     `json:"gangsSplit"`
	GangsPartial   int     `json:"gangsPartial"`
	OfflineBestFit int     `json:"offlineBestFit"`
	LiveGangs      int     `json:"liveGangs"`
	LiveGangsWhole int     `json:"liveGangsWhole"`
	LatencyP50ms   float64 `json:"gangLatencyP50ms"`
	LatencyP99ms   float64 `json:"gangLatencyP99ms"`
	LatencyMaxms   float64 `json:"gangLatencyMaxms"`
	FreeGPUs       int64   `json:"freeGPUs"`
	StrandedGPUs   int64   `json:"strandedGPUs"`
	PeakRSSMiB     float64 `json:"peakRSSMiB"`
}

func printQuality(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "observer_*.json"))
	var obs []observation
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		var o observation
		if err := json.Unmarshal(raw, &o); err != nil {
			fail(fmt.Errorf("%s: %w", f, err))
		}
		obs = append(obs, o)
	}
	if len(obs) == 0 {
		return
	}
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Name < obs[j].Name })
	fmt.Println()
	fmt.Println("Placement quality and memory (observer: gang latency = last member created -> last member bound; offline best fit = live gangs a sequential best fit places whole; stranded = free GPUs in domains that cannot host the smallest gang; RSS = whole test process: API server + scheduler + load generator):")
	fmt.Println()
	fmt.Println("| Workload | Size | Scheduler | Pods bound | Gangs | Placed | Split | Partial | Live whole / offline best fit | Gang p50 (ms) | Gang p99 (ms) | Gang max (ms) | Free GPUs | Stranded GPUs | Peak RSS (MiB) |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, o := range obs {
		parts := strings.Split(strings.TrimPrefix(o.Name, "BenchmarkPerfScheduling/"), "/")
		if len(parts) < 2 {
			continue
		}
		w, s := split(parts[0])
		fmt.Printf("| %s | %s | %s | %d/%d | %d | %d | %d | %d | %d / %d | %.0f | %.0f | %.0f | %d | %d | %.0f |\n",
			w, parts[1], s, o.PodsBound, o.Pods, o.Gangs, o.GangsPlaced, o.GangsSplit, o.GangsPartial,
			o.LiveGangsWhole, o.OfflineBestFit, o.LatencyP50ms, o.LatencyP99ms, o.LatencyMaxms,
			o.FreeGPUs, o.StrandedGPUs, o.PeakRSSMiB)
	}
}

func get(m map[string]float64, k string) string {
	if m == nil {
		return ""
	}
	v, ok := m[k]
	if !ok {
		return ""
	}
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

func resolve(arg string) (string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return arg, nil
	}
	matches, err := filepath.Glob(filepath.Join(arg, "BenchmarkPerfScheduling*.json"))
	if err != nil {
		return "", err
	}
	newest, newestT := "", int64(0)
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.ModTime().UnixNano() > newestT {
			newest, newestT = m, st.ModTime().UnixNano()
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no BenchmarkPerfScheduling*.json in %s", arg)
	}
	return newest, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
