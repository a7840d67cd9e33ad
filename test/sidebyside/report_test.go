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
	goroutines          int     // go_goroutines at the end
	goroutinesPeak      int     // the largest go_goroutines sampled every second
	apiWrites           float64 // rest_client_requests_total, POST+PATCH+PUT, at the end
	heapPath, heapTop   string
	// startedAt, firstAt and lastAt are when the process started and the first and last pod
	// was seen bound.
	startedAt, firstAt, lastAt time.Time
	fo                         failoverResult // failover mode only
}

func (r result) span() time.Duration { return r.lastBind - r.firstBind }

// podsPerSec is the backlog over the time from the first bind to the last.
func (r result) podsPerSec() float64 {
	if r.span() <= 0 {
		return 0
	}
	return float64(r.pods) / r.span().Seconds()
}

// writesPerPod is the process's API write requests per pod of the backlog.
func (r result) writesPerPod() float64 {
	if r.pods == 0 {
		return 0
	}
	return r.apiWrites / float64(r.pods)
}

func (r result) summary() string {
	return fmt.Sprintf("%d pods bound, first %.1fs and last %.1fs after the process started (%.1fs, %.1f pods/s); "+
		"CPU %.1fs; peak RSS %.0f MiB (VmHWM), largest sampled VmRSS %.0f MiB; live heap after GC %.1f MiB, "+
		"%d goroutines at the end, %d at the peak; %.0f API writes (%.2f per pod); "+
		"%d of %d gangs split across cliques\nheap profile %s, in-use space:\n%s",
		r.pods, r.firstBind.Seconds(), r.lastBind.Seconds(), r.span().Seconds(), r.podsPerSec(),
		r.cpuSec, r.hwmMiB, r.sampledMiB, r.heapMiB, r.goroutines, r.goroutinesPeak, r.apiWrites, r.writesPerPod(),
		r.splits, r.gangs, r.heapPath, r.heapTop)
}

// column is one table column: a header and the value it reads from a result.
type column struct {
	head   string
	format string
	value  func(result) float64
	ratio  bool // followed by an "ome/stock" column of the medians
	share  bool // followed by a "share of limit" column: the row's median over limit's
}

var columns = []column{
	{head: "Pods", format: "%.0f", value: func(r result) float64 { return float64(r.pods) }},
	{head: "First→last bind (s)", format: "%.1f", value: func(r result) float64 { return r.span().Seconds() }},
	{head: "All bound after start (s)", format: "%.1f", value: func(r result) float64 { return r.lastBind.Seconds() }},
	{head: "Pods/s", format: "%.1f", value: result.podsPerSec, ratio: true, share: true},
	{head: "Peak RSS (MiB)", format: "%.0f", value: func(r result) float64 { return r.hwmMiB }, ratio: true},
	{head: "Live heap after GC (MiB)", format: "%.1f", value: func(r result) float64 { return r.heapMiB }},
	{head: "Goroutines peak", format: "%.0f", value: func(r result) float64 { return float64(r.goroutinesPeak) }},
	{head: "Goroutines end", format: "%.0f", value: func(r result) float64 { return float64(r.goroutines) }},
	{head: "CPU (s)", format: "%.1f", value: func(r result) float64 { return r.cpuSec }},
	{head: "API writes/pod", format: "%.2f", value: result.writesPerPod},
	{head: "Gangs split", format: "%.0f", value: func(r result) float64 { return float64(r.splits) }},
}

// resultsTable renders one markdown row per scheduler and gang size: stock and limit once
// (they ignore gangs and ran on the first gang size's backlog), ome per gang size. A cell is
// the value of a single run, or the median and min–max over the runs; "ome/stock" is ome's
// median over stock's, "share of limit" the row's median pods/s over limit's.
func resultsTable(p params, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Side by side, %s: %d nodes × %d nvidia.com/gpu, cliques of %d nodes, fill %.2f, %d run(s) per case, "+
		"GOMAXPROCS %d, kwok %v, client QPS %g burst %d (every scheduler).\n\n", time.Now().UTC().Format("2006-01-02"),
		p.nodes, p.gpusPerNode, p.clique, p.fill, p.runs, runtime.GOMAXPROCS(0), p.kwok, p.qps, p.burst)
	cols := columns
	if p.failover {
		cols = failoverColumns
		b.WriteString(failoverNote(p) + "\n")
	}
	head := []string{"Gang", "Scheduler"}
	for _, c := range cols {
		head = append(head, c.head)
		if c.ratio {
			head = append(head, "ome/stock")
		}
		if c.share {
			head = append(head, "Share of limit")
		}
	}
	fmt.Fprintf(&b, "| %s |\n|---|---|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(head)-2))
	by := map[string][]result{}
	for _, r := range results {
		by[r.sched] = append(by[r.sched], r)
	}
	for _, sched := range []string{stock, limit} {
		if rs := by[sched]; len(rs) > 0 {
			fmt.Fprintf(&b, "| — | %s |\n", strings.Join(rowCells(cols, sched, rs, by), " | "))
		}
	}
	for _, g := range p.gangs {
		var rs []result
		for _, r := range by[ome] {
			if r.gang == g {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			fmt.Fprintf(&b, "| %d | %s |\n", g, strings.Join(rowCells(cols, ome, rs, by), " | "))
		}
	}
	if len(by[stock])+len(by[limit]) > 0 {
		fmt.Fprintf(&b, "\nstock and limit ignore gangs and ran once per run on the backlog of gang size %d "+
			"(their Gangs split counts gangs of %d).\n", p.gangs[0], p.gangs[0])
	}
	return b.String()
}

// rowCells are a row's cells after Gang: the scheduler, then every column.
func rowCells(cols []column, sched string, rs []result, by map[string][]result) []string {
	row := []string{sched}
	for _, c := range cols {
		row = append(row, cell(c, rs))
		if c.ratio {
			row = append(row, ratioCell(c, sched, rs, by[stock]))
		}
		if c.share {
			row = append(row, shareCell(c, rs, by[limit]))
		}
	}
	return row
}

func cell(c column, rs []result) string {
	med, lo, hi := stats(c, rs)
	if len(rs) == 1 || lo == hi {
		return fmt.Sprintf(c.format, med)
	}
	return fmt.Sprintf(c.format+" ("+c.format+"–"+c.format+")", med, lo, hi)
}

// ratioCell is ome's median over stock's; "—" in the other rows or without stock.
func ratioCell(c column, sched string, rs, stockRs []result) string {
	if sched != ome || len(stockRs) == 0 {
		return "—"
	}
	return quotient(c, rs, stockRs)
}

// shareCell is the row's median over limit's; "—" without limit.
func shareCell(c column, rs, limitRs []result) string {
	if len(limitRs) == 0 {
		return "—"
	}
	return quotient(c, rs, limitRs)
}

func quotient(c column, rs, of []result) string {
	ours, _, _ := stats(c, rs)
	theirs, _, _ := stats(c, of)
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
