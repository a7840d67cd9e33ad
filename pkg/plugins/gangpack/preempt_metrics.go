package gangpack

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Preemption metric labels.
const (
	preemptorGang            = "gang"
	preemptorPod             = "pod"
	preemptResultPreempted   = "preempted"
	preemptResultNoCandidate = "no_candidate"
	unitGang                 = "gang"
	unitPod                  = "pod"
)

var (
	preemptionTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "ome_scheduler_preemption_total",
		Help: "Preemption decisions by preemptor kind (gang, pod) and result: preempted (victims were evicted " +
			"to free one domain or node) or no_candidate (the preemptor lacked room and no eviction could make it).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"preemptor", "result"})
	preemptionVictimsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "ome_scheduler_preemption_victims_total",
		Help: "Victim units evicted by preemption: one per whole gang (unit=gang, however many members it " +
			"had) and one per standalone pod (unit=pod).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"unit"})
)

// registerPreemptionMetrics is called once per process from registerMetrics.
func registerPreemptionMetrics() {
	legacyregistry.MustRegister(preemptionTotal, preemptionVictimsTotal)
	for _, p := range []string{preemptorGang, preemptorPod} {
		for _, r := range []string{preemptResultPreempted, preemptResultNoCandidate} {
			preemptionTotal.WithLabelValues(p, r).Add(0)
		}
	}
	for _, u := range []string{unitGang, unitPod} {
		preemptionVictimsTotal.WithLabelValues(u).Add(0)
	}
}
