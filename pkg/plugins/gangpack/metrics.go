package gangpack

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Pin results (ome_scheduler_gang_pin_total{result}).
const (
	pinPinned            = "pinned"
	pinPinnedAfterFilter = "pinned_after_filter"
	pinNoFit             = "no_fit"
	pinReserved          = "reserved"
	pinAdopted           = "adopted"
	pinStaleReplan       = "stale_replan"
	pinTopologyReplan    = "topology_replan"
)

// Activation triggers (ome_scheduler_gang_activation_total{trigger}).
const (
	triggerPermit              = "permit"
	triggerTemplatesComplete   = "templates_complete"
	triggerReservationReleased = "reservation_released"
	triggerPodGroupChange      = "podgroup_change"
	triggerDomainFailed        = "domain_failed"
)

// Placement group results (ome_scheduler_placement_group_total{result}).
const (
	groupPlaced  = "placed"
	groupNoFit   = "no_fit"
	groupUnwound = "unwound"
)

// Placement outcomes (ome_scheduler_gang_placement_total{outcome}).
const (
	outcomeSingleDomain = "single_domain"
	outcomeSplit        = "split"
	outcomeSplitRefused = "split_refused"
)

var (
	placementTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_placement_total",
		Help:           "Gang placement outcomes (single_domain, split, split_refused): admitted gangs verified in one domain, admitted gangs found across domains (must stay 0), PreFilter refusals of gangs whose members already sit in several domains.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome"})
	domainMemberRoom = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_domain_member_room",
		Help:           "Members of the last planned gang's shape that each domain's nodes can take, from the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "domain"})
	domainHeld = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_domain_held",
		Help:           "Whether a forming gang holds the domain (1) or not (0).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "domain"})
	strandedCapacity = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_stranded_capacity",
		Help:           "Free units of the planned gang's largest extended resource in domains whose member room is below the smallest pending gang's need, at the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "resource"})
	largestPlaceableGang = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_largest_placeable_gang",
		Help:           "Largest domain member room, in members of the planned gang's shape, at the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key"})
	formationDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Name:           "ome_scheduler_gang_formation_duration_seconds",
		Help:           "Seconds from the creation of a gang's minMember-th member to the Permit admission of the gang.",
		Buckets:        metrics.ExponentialBucketsRange(0.01, 600, 17),
		StabilityLevel: metrics.ALPHA,
	})
)

// registerQualityMetrics is called once per process from registerMetrics.
func registerQualityMetrics() {
	legacyregistry.MustRegister(placementTotal, domainMemberRoom, domainHeld, strandedCapacity, largestPlaceableGang, formationDuration)
	for _, o := range []string{outcomeSingleDomain, outcomeSplit, outcomeSplitRefused} {
		placementTotal.WithLabelValues(o).Add(0)
	}
}

var (
	pinTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_pin_total",
		Help:           "Gang domain-placement decisions by result (pinned, pinned_after_filter, no_fit, reserved, adopted, stale_replan, topology_replan).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	gateTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_gate_total",
		Help:           "Permit gate evaluations by result (wait, admit).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	activationTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_activation_total",
		Help:           "Explicit pod activations by trigger (permit, templates_complete, reservation_released, podgroup_change, domain_failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"trigger"})
	unwindTotal = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_unwind_total",
		Help:           "Gang attempts unwound: commitments released with their waiting members rejected.",
		StabilityLevel: metrics.ALPHA,
	})
	groupTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_placement_group_total",
		Help:           "Partner placement group decisions by result (placed, no_fit, unwound).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	pinnedGroups = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "ome_scheduler_pinned_groups",
		Help:           "Gangs currently pinned to a domain, forming or committed.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the contract metrics once per process in the component-base
// legacy registry (served on the scheduler's /metrics) and creates every documented series.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(pinTotal, gateTotal, activationTotal, unwindTotal, pinnedGroups, groupTotal)
		for _, r := range []string{groupPlaced, groupNoFit, groupUnwound} {
			groupTotal.WithLabelValues(r).Add(0)
		}
		for _, r := range []string{pinPinned, pinPinnedAfterFilter, pinNoFit, pinReserved, pinAdopted, pinStaleReplan, pinTopologyReplan} {
			pinTotal.WithLabelValues(r).Add(0)
		}
		for _, r := range []string{"wait", "admit"} {
			gateTotal.WithLabelValues(r).Add(0)
		}
		for _, t := range []string{triggerPermit, triggerTemplatesComplete, triggerReservationReleased, triggerPodGroupChange, triggerDomainFailed} {
			activationTotal.WithLabelValues(t).Add(0)
		}
		unwindTotal.Add(0)
		pinnedGroups.Set(0)
		registerQualityMetrics()
		registerPreemptionMetrics()
	})
}

func countPin(result string) { pinTotal.WithLabelValues(result).Inc() }
