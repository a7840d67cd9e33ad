package bench

import (
	"slices"
	"time"
)

// burstNamespace is the measured namespace of workload Burst: the observer computes the
// throughput windows over its pods' bind times.
const burstNamespace = "burst"

// burstFillNamespace holds workload Burst's standalone fill pods, deleted during the burst:
// the observer records when, so a slow window can be told apart from room not yet freed.
const burstFillNamespace = "burst-fill"

// windowSeconds is the width of the throughput window ("no 10-second window below 20 % of
// the mean").
const windowSeconds = 10

// windowStats is the throughput of a burst seen through its pods' bind times: the run is
// from the first pod created to the last pod bound; Mean is bound pods over that time.
// Binds are counted in whole 1 s bins from the start (a last partial bin counts in Mean
// only); every run of windowSeconds consecutive bins is a window, and Worst is the window
// with the fewest binds. Windows is 0 when the run is shorter than one window, and then
// the worst figures are 0.
type windowStats struct {
	Pods, Bound    int
	Run            time.Duration
	Mean           float64 // pods/s over the run
	Windows        int
	Worst          float64 // pods/s in the lowest window
	WorstAtSeconds int     // the lowest window's first second from the start
	WorstFraction  float64 // Worst / Mean
}

// throughputWindows computes windowStats from the pods' creation times and the bind times of
// those that were bound (zero times are ignored).
func throughputWindows(created, bound []time.Time, window int) windowStats {
	var ws windowStats
	var start, end time.Time
	for _, c := range created {
		if c.IsZero() {
			continue
		}
		ws.Pods++
		if start.IsZero() || c.Before(start) {
			start = c
		}
	}
	var binds []time.Time
	for _, b := range bound {
		if b.IsZero() {
			continue
		}
		binds = append(binds, b)
		if b.After(end) {
			end = b
		}
	}
	ws.Bound = len(binds)
	if ws.Bound == 0 || start.IsZero() || !end.After(start) {
		return ws
	}
	ws.Run = end.Sub(start)
	ws.Mean = float64(ws.Bound) / ws.Run.Seconds()
	full := int(ws.Run / time.Second)
	if window <= 0 || full < window {
		return ws
	}
	bins := make([]int, full)
	for _, b := range binds {
		if i := int(b.Sub(start) / time.Second); i >= 0 && i < full {
			bins[i]++
		}
	}
	sum := 0
	for _, n := range bins[:window] {
		sum += n
	}
	worst, at := sum, 0
	for i := window; i < full; i++ {
		sum += bins[i] - bins[i-window]
		if sum < worst {
			worst, at = sum, i-window+1
		}
	}
	ws.Windows = full - window + 1
	ws.Worst = float64(worst) / float64(window)
	ws.WorstAtSeconds = at
	ws.WorstFraction = ws.Worst / ws.Mean
	return ws
}

// binsPerSecond is the bind count of each whole second from the first creation (for the
// observer's JSON: the curve the windows slide over).
func binsPerSecond(created, bound []time.Time) []int {
	start := time.Time{}
	for _, c := range created {
		if !c.IsZero() && (start.IsZero() || c.Before(start)) {
			start = c
		}
	}
	if start.IsZero() {
		return nil
	}
	var bins []int
	for _, b := range bound {
		if b.IsZero() || b.Before(start) {
			continue
		}
		i := int(b.Sub(start) / time.Second)
		if i >= len(bins) {
			bins = append(bins, make([]int, i+1-len(bins))...)
		}
		bins[i]++
	}
	return slices.Clip(bins)
}
