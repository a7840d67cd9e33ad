package sidebyside

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/test/sidebyside/limitplan"
)

// planCluster is nodes in cliques of clique nodes with gpus each, and gangs of gang one-GPU
// pods filling fill of the GPUs, named as the benchmark names them.
func planCluster(nodes, clique, gpus, gang int, fill float64) ([]limitplan.Node, []limitplan.Pod) {
	var ns []limitplan.Node
	for i := range nodes {
		ns = append(ns, limitplan.Node{Name: fmt.Sprintf("gpu-node-%05d", i), Clique: fmt.Sprintf("clique-%04d", i/clique), GPUs: int64(gpus)})
	}
	var ps []limitplan.Pod
	total := int(float64(nodes*gpus)*fill) / gang * gang
	for i := range total {
		g := gangName(i / gang)
		ps = append(ps, limitplan.Pod{Name: fmt.Sprintf("%s-%d", g, i%gang), Gang: g, GPUs: 1})
	}
	return ns, ps
}

func TestLimitPlanPlacesGangsInOneClique(t *testing.T) {
	for _, tc := range []struct {
		nodes, clique, gpus, gang int
		fill                      float64
	}{
		{64, 8, 1, 4, 1}, {64, 8, 1, 8, 1}, {64, 8, 2, 4, 1}, {60, 8, 1, 3, 1}, {64, 8, 1, 6, 0.9},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			nodes, pods := planCluster(tc.nodes, tc.clique, tc.gpus, tc.gang, tc.fill)
			placed, unplaced := limitplan.Place(nodes, pods)
			if len(unplaced) > 0 {
				t.Fatalf("unplaced pods %v", unplaced)
			}
			if err := limitplan.Check(nodes, pods, placed); err != nil {
				t.Fatal(err)
			}
			cliqueOf := map[string]string{}
			for _, n := range nodes {
				cliqueOf[n.Name] = n.Clique
			}
			cliques := map[string]map[string]bool{}
			for _, p := range pods {
				if cliques[p.Gang] == nil {
					cliques[p.Gang] = map[string]bool{}
				}
				cliques[p.Gang][cliqueOf[placed[p.Name]]] = true
			}
			splits := 0
			for _, cs := range cliques {
				if len(cs) > 1 {
					splits++
				}
			}
			// Only the gangs beyond what whole cliques can hold may split.
			whole := 0
			for c := 0; c*tc.clique < tc.nodes; c++ {
				whole += min(tc.clique, tc.nodes-c*tc.clique) * tc.gpus / tc.gang
			}
			if want := max(0, len(cliques)-whole); splits != want {
				t.Errorf("%d of %d gangs split, want %d", splits, len(cliques), want)
			}
		})
	}
}

func TestLimitPlanSpillsOnlyWhatDoesNotFit(t *testing.T) {
	node := func(name, clique string) limitplan.Node { return limitplan.Node{Name: name, Clique: clique, GPUs: 1} }
	pod := func(name, gang string) limitplan.Pod { return limitplan.Pod{Name: name, Gang: gang, GPUs: 1} }
	nodes := []limitplan.Node{node("a", "c1"), node("b", "c1"), node("c", "c2"), node("d", "c2")}
	// A gang of 3 fits no clique of 2: it spills; the two single pods get what is left.
	pods := []limitplan.Pod{pod("g1-0", "g1"), pod("g1-1", "g1"), pod("g1-2", "g1"), pod("x", ""), pod("y", "")}
	placed, unplaced := limitplan.Place(nodes, pods)
	if len(unplaced) != 1 || unplaced[0] != "y" {
		t.Fatalf("unplaced %v, want [y] (4 GPUs for 5 pods)", unplaced)
	}
	if len(placed) != 4 {
		t.Fatalf("placed %v, want 4 pods", placed)
	}
	if err := limitplan.Check(nodes, pods[:4], placed); err != nil {
		t.Fatal(err)
	}
	if err := limitplan.Check(nodes, pods, placed); err == nil {
		t.Fatal("Check accepted a placement without pod y")
	}
}

func TestResultsTableShareAndRatio(t *testing.T) {
	p := params{nodes: 8, gpusPerNode: 1, clique: 8, gangs: []int{4, 8}, fill: 1, runs: 2, qps: 50, burst: 100}
	mk := func(sched string, gang int, span time.Duration, rss float64) result {
		return result{scenario: scenario{params: p, gang: gang, sched: sched}, pods: 100,
			firstBind: time.Second, lastBind: time.Second + span, hwmMiB: rss, apiWrites: 250}
	}
	results := []result{
		mk(stock, 4, 4*time.Second, 100), mk(stock, 4, 6*time.Second, 100), // 20 pods/s median (25, 16.7 → 20.8)
		mk(limit, 4, 2*time.Second, 20), mk(limit, 4, 2*time.Second, 20), // 50 pods/s
		mk(ome, 4, 5*time.Second, 150), mk(ome, 4, 5*time.Second, 150), // 20 pods/s
		mk(ome, 8, 10*time.Second, 50), // 10 pods/s
	}
	table := resultsTable(p, results)
	rows := map[string][]string{}
	for _, l := range strings.Split(table, "\n") {
		f := strings.Split(l, " | ")
		if len(f) > 2 {
			rows[strings.TrimPrefix(f[0], "| ")+"/"+f[1]] = f
		}
	}
	// Columns: Gang, Scheduler, Pods, First→last, All bound, Pods/s, ome/stock, Share of limit,
	// Peak RSS, ome/stock, Live heap, Goroutines peak, Goroutines end, CPU, API writes/pod, Gangs split.
	want := map[string][]string{
		"—/stock": {5: "20.8 (16.7–25.0)", 6: "—", 7: "0.42", 8: "100", 9: "—", 14: "2.50"},
		"—/limit": {5: "50.0", 6: "—", 7: "1.00", 8: "20", 9: "—"},
		"4/ome":   {5: "20.0", 6: "0.96", 7: "0.40", 8: "150", 9: "1.50"},
		"8/ome":   {5: "10.0", 6: "0.48", 7: "0.20", 8: "50", 9: "0.50"},
	}
	for key, cells := range want {
		row, ok := rows[key]
		if !ok {
			t.Fatalf("no row %s in\n%s", key, table)
		}
		for i, w := range cells {
			if w != "" && row[i] != w {
				t.Errorf("row %s column %d = %q, want %q\n%s", key, i, row[i], w, table)
			}
		}
	}
	if !strings.Contains(table, "client QPS 50 burst 100") {
		t.Errorf("header lacks the client QPS and burst:\n%s", table)
	}
}

func TestCasesRunStockAndLimitOnce(t *testing.T) {
	p := params{gangs: []int{4, 8, 16}, scheds: []string{stock, ome, limit}}
	var got []string
	for _, sc := range p.cases(1) {
		got = append(got, fmt.Sprintf("%s%d", sc.sched, sc.gang))
	}
	if want := "stock4 ome4 ome8 ome16 limit4"; strings.Join(got, " ") != want {
		t.Errorf("cases %v, want %s", got, want)
	}
}
