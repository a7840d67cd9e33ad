// Command benchtable turns scheduler_perf's JSON data items
// (BenchmarkPerfScheduling_benchmark_ome_<timestamp>.json) into Markdown tables:
// SchedulingThroughput average / p50 / p90, the pod scheduling SLI latency and the Permit
// wait per workload and scheduler, and OMEGangPack's own time per extension point.
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
