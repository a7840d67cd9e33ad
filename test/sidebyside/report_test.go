package sidebyside

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// result is one case's measurements. Times are from the scheduler process's start.
type result struct {
	scenario
	pods                int
	firstBind, lastBind time.Duration
	hwmMiB              float64 // VmHWM at the end
	sampledMiB          float64 // the largest VmRSS sampled every 200 ms
	heapMiB             float64 // live heap after a GC (go_memstats_heap_alloc_bytes)
	cpuSec              float64 // user + system CPU time of the scheduler process
	gangs, splits       int
	goroutines          int // go_goroutines at the end
	heapPath, heapTop   string
}

func (r result) span() time.Duration { return r.lastBind - r.firstBind }

// podsPerSec is the backlog over the time from the first bind to the last.
func (r result) podsPerSec() float64 {
	if r.span() <= 0 {
		return 0
	}
	return float64(r.pods) / r.span().Seconds()
}

func (r result) summary() string {
	return fmt.Sprintf("%d pods bound, first %.1fs and last %.1fs after the process started (%.1fs, %.1f pods/s); "+
		"CPU %.1fs; peak RSS %.0f MiB (VmHWM), largest sampled VmRSS %.0f MiB; live heap after GC %.1f MiB, %d goroutines; "+
		"%d of %d gangs split across cliques\nheap profile %s, in-use space:\n%s",
		r.pods, r.firstBind.Seconds(), r.lastBind.Seconds(), r.span().Seconds(), r.podsPerSec(),
		r.cpuSec, r.hwmMiB, r.sampledMiB, r.heapMiB, r.goroutines, r.splits, r.gangs, r.heapPath, r.heapTop)
}

// column is one table column: a header and the value it reads from a result.
type column struct {
	head   string
	format string
	value  func(result) float64
	ratio  bool // followed by an "ours/stock" column of the medians
}

var columns = []column{
	{"First→last bind (s)", "%.1f", func(r result) float64 { return r.span().Seconds() }, false},
	{"All bound after start (s)", "%.1f", func(r result) float64 { return r.lastBind.Seconds() }, false},
	{"Pods/s", "%.1f", result.podsPerSec, true},
	{"Peak RSS (MiB)", "%.0f", func(r result) float64 { return r.hwmMiB }, true},
	{"Live heap after GC (MiB)", "%.1f", func(r result) float64 { return r.heapMiB }, false},
	{"CPU (s)", "%.1f", func(r result) float64 { return r.cpuSec }, false},
	{"Gangs split", "%.0f", func(r result) float64 { return float64(r.splits) }, false},
}

// resultsTable renders one markdown row per gang size and scheduler: the value of a single
// run, or the median and min–max over the runs; ratios are ome's median over stock's.
func resultsTable(p params, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Side by side, %s: %d nodes × %d nvidia.com/gpu, cliques of %d nodes, fill %.2f, %d run(s) per case, "+
		"GOMAXPROCS %d, kwok %v.\n\n", time.Now().UTC().Format("2006-01-02"), p.nodes, p.gpusPerNode, p.clique,
		p.fill, p.runs, runtime.GOMAXPROCS(0), p.kwok)
	head := []string{"Gang", "Scheduler", "Pods"}
	for _, c := range columns {
		head = append(head, c.head)
		if c.ratio {
			head = append(head, "ours/stock")
		}
	}
	fmt.Fprintf(&b, "| %s |\n|---|---|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(head)-2))
	for _, g := range p.gangs {
		by := map[string][]result{}
		for _, r := range results {
			if r.gang == g {
				by[r.sched] = append(by[r.sched], r)
			}
		}
		for _, sched := range []string{stock, ome} {
			rs := by[sched]
			if len(rs) == 0 {
				continue
			}
			row := []string{fmt.Sprint(g), sched, fmt.Sprint(rs[0].pods)}
			for _, c := range columns {
				row = append(row, cell(c, rs))
				if c.ratio {
					row = append(row, ratioCell(c, sched, rs, by[stock]))
				}
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
	}
	return b.String()
}

func cell(c column, rs []result) string {
	med, lo, hi := stats(c, rs)
	if len(rs) == 1 {
		return fmt.Sprintf(c.format, med)
	}
	return fmt.Sprintf(c.format+" ("+c.format+"–"+c.format+")", med, lo, hi)
}

func ratioCell(c column, sched string, rs, stockRs []result) string {
	if sched == stock || len(stockRs) == 0 {
		return "—"
	}
	ours, _, _ := stats(c, rs)
	theirs, _, _ := stats(c, stockRs)
	if theirs == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", ours/theirs)
}

// stats returns the median, minimum and maximum of a column over results.
func stats(c column, rs []result) (med, lo, hi float64) {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = c.value(r)
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		med = vs[n/2]
	} else {
		med = (vs[n/2-1] + vs[n/2]) / 2
	}
	return med, vs[0], vs[n-1]
}
