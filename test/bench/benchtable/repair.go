package main

import (
	"fmt"

	"github.com/moirai-internal/ome-scheduler/test/bench/observation"
)

// printRepair prints workload NodeFailure's repairs, one row per run (docs/benchmarks.md,
// "Repair and failover").
func printRepair(obs []observation.Result) {
	found := false
	for _, o := range obs {
		found = found || o.Repair != nil
	}
	if !found {
		return
	}
	heading("Node-failure repair, one row per run (replacement created -> bound; in domain = bound in the survivors' domain, by what that domain offered when the nodes failed: free room, room once lower-priority pods are evicted, neither):",
		"| Workload | Size | Scheduler | Nodes failed | Replacements bound | p50 (ms) | p99 (ms) | max (ms) | In domain: room | victims | neither | Survivors evicted | Other gangs' members evicted | Standalone evicted | Gangs split | Gangs still waiting | Repair (s) |",
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, o := range obs {
		r := o.Repair
		w, size, s, ok := caseOf(o.Name)
		if r == nil || !ok {
			continue
		}
		fmt.Printf("| %s | %s | %s | %d / %d | %d / %d | %.1f | %.1f | %.1f | %s | %s | %s | %d | %d | %d | %d | %d | %.1f |\n",
			w, size, s, r.NodesFailed, r.Nodes, r.Bound, r.Replacements, r.P50ms, r.P99ms, r.Maxms,
			share(r.RoomInDomain, r.Room), share(r.VictimInDomain, r.Victims), share(r.NoRoomInDomain, r.NoRoom),
			r.SurvivorsEvicted, r.OtherGangsEvicted, r.StandaloneEvicted, r.GangsSplit, r.GangsWaiting, r.Seconds)
	}
}

// share is "in/of (percent)", or "-" when of is 0.
func share(in, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.0f %%)", in, of, 100*float64(in)/float64(of))
}
