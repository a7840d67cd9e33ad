package metrics

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The bind window's series (docs/operations.md, "Memory and the bind window").
var (
	BindsInFlight = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "ome_scheduler_binds_in_flight",
		Help:           "Pods waiting on the API client for their nominatedNodeName PATCH or their binding (the bind window's count).",
		StabilityLevel: metrics.ALPHA,
	})
	BindWindowWaitSeconds = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "ome_scheduler_bind_window_wait_seconds_total",
		Help:           "Time scheduling cycles waited for binds in flight to drain below the bind window's limit.",
		StabilityLevel: metrics.ALPHA,
	})
)

func registerPaceMetrics() {
	legacyregistry.MustRegister(BindsInFlight, BindWindowWaitSeconds)
	BindsInFlight.Set(0)
	BindWindowWaitSeconds.Add(0)
}
