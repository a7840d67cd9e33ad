package metrics

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Preemption metric labels.
const (
	PreemptorGang            = "gang"
	PreemptorPod             = "pod"
	PreemptResultPreempted   = "preempted"
	PreemptResultNoCandidate = "no_candidate"
	UnitGang                 = "gang"
	UnitPod                  = "pod"
)

var (
	PreemptionTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "ome_scheduler_preemption_total",
		Help: "Preemption decisions by preemptor kind (gang, pod) and result: preempted (victims were evicted " +
			"to free one domain or node) or no_candidate (the preemptor lacked room and no eviction could make it).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"preemptor", "result"})
	PreemptionVictimsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "ome_scheduler_preemption_victims_total",
		Help: "Victim units evicted by preemption: one per whole gang (unit=gang, however many members it " +
			"had) and one per standalone pod (unit=pod).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"unit"})
)

// registerPreemptionMetrics is called once per process from Register.
func registerPreemptionMetrics() {
	legacyregistry.MustRegister(PreemptionTotal, PreemptionVictimsTotal)
	for _, p := range []string{PreemptorGang, PreemptorPod} {
		for _, r := range []string{PreemptResultPreempted, PreemptResultNoCandidate} {
			PreemptionTotal.WithLabelValues(p, r).Add(0)
		}
	}
	for _, u := range []string{UnitGang, UnitPod} {
		PreemptionVictimsTotal.WithLabelValues(u).Add(0)
	}
}
