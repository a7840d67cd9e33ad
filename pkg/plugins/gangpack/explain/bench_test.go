package explain

import (
	"fmt"
	"math/rand"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// bigCluster is 5,000 8-GPU nodes in 625 cliques of 8, about half of their GPUs used by
// standalone pods and bound gang members, and forming gangs reserving room in 50 cliques.
func bigCluster() *Cluster {
	rng := rand.New(rand.NewSource(1))
	c := &Cluster{Args: testArgs(), Reservations: &Reservations{Leader: true}}
	for i := 0; i < 5000; i++ {
		name := fmt.Sprintf("n%04d", i)
		c.Nodes = append(c.Nodes, node(name, fmt.Sprintf("clique-%03d", i/8), 8))
		if used := rng.Int63n(9); used > 0 {
			group := ""
			if rng.Intn(2) == 0 {
				group = fmt.Sprintf("bound-%d", i/8)
			}
			c.Pods = append(c.Pods, pod("load", fmt.Sprintf("p%04d", i), name, group, used))
		}
	}
	for g := 0; g < 50; g++ {
		d := g * 12
		c.Reservations.Pins = append(c.Reservations.Pins, Pin{Gang: fmt.Sprintf("t/forming-%d", g), TopologyKey: clique,
			Domain: fmt.Sprintf("clique-%03d", d), Forming: true, Remaining: 1, MinMember: 2,
			Reserved: []ReservedSlot{{Node: fmt.Sprintf("n%04d", d*8), Members: 1, Each: map[string]int64{gpu: 1}}}})
	}
	return c
}

// BenchmarkExplain5000 is `kubectl ome whatif` (the same Explain as `explain podgroup`) of a
// gang of 4 members of 4 GPUs on 5,000 nodes, once the nodes and pods are read: the snapshot,
// the planning over every node and the per-domain report, with the garbage collector set as
// kubectl-ome sets it (GCPercent). p99-ms is the 99th percentile of
// the iterations' durations.
func BenchmarkExplain5000(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent)) // as kubectl-ome runs
	c := bigCluster()
	s := Shape{Namespace: "t", MinMember: 4, Requests: v1.ResourceList{v1.ResourceName(gpu): *resourceOf(4)}}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := WhatIf(c, s)
		took = append(took, time.Since(start))
		if err != nil || r.ChosenDomain == "" || len(r.Domains) != 625 {
			b.Fatalf("%v: chosen %q, %d domains", err, r.ChosenDomain, len(r.Domains))
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
}
