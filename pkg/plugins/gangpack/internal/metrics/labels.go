package metrics

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The placement labels' series (docs/reference.md, "Placement labels").
var (
	PlacementLabelsSkipped = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_placement_labels_skipped_total",
		Help:           "Placement labels not put on a Binding because the pod already carried the key.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"key"})
	PlacementLabelsApplied = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "ome_scheduler_placement_labels_applied",
		Help:           "1 while the API server copies a Binding's labels onto the pod (1 until a bound pod shows otherwise); 0 once a bound pod came back without them.",
		StabilityLevel: metrics.ALPHA,
	})
)

func registerLabelMetrics() {
	legacyregistry.MustRegister(PlacementLabelsSkipped, PlacementLabelsApplied)
	PlacementLabelsApplied.Set(1)
}
