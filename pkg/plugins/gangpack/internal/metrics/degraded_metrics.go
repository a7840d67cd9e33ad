package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// DegradedGangs counts, per topology key, the gangs whose bound live members are fewer than
// minMember while replacements are pending (docs/operations.md, "An instance lost a node").
var DegradedGangs = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name:           "ome_scheduler_degraded_gangs",
	Help:           "Gangs whose bound live members are fewer than minMember while replacements are pending, by topology key.",
	StabilityLevel: metrics.ALPHA,
}, []string{"topology_key"})

var (
	degradedMu   sync.Mutex
	degradedKeys = map[string]struct{}{}
)

func registerDegradedMetrics() { legacyregistry.MustRegister(DegradedGangs) }

// SetDegraded publishes the degraded gangs counted per topology key. A key published once
// stays, at 0 when no gang under it is degraded, so the series does not vanish between
// degradations; keys are the topology keys of gangs, a handful per cluster.
func SetDegraded(counts map[string]int) {
	degradedMu.Lock()
	defer degradedMu.Unlock()
	for k := range counts {
		degradedKeys[k] = struct{}{}
	}
	for k := range degradedKeys {
		DegradedGangs.WithLabelValues(k).Set(float64(counts[k]))
	}
}
