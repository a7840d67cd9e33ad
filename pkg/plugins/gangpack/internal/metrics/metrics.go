package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Pin results (ome_scheduler_gang_pin_total{result}).
const (
	PinPinned            = "pinned"
	PinPreferred         = "preferred"
	PinPinnedAfterFilter = "pinned_after_filter"
	PinNoFit             = "no_fit"
	PinReserved          = "reserved"
	PinAdopted           = "adopted"
	PinNominated         = "nominated"
	PinStaleReplan       = "stale_replan"
	PinTopologyReplan    = "topology_replan"
)

// Activation triggers (ome_scheduler_gang_activation_total{trigger}).
const (
	TriggerPermit              = "permit"
	TriggerTemplatesComplete   = "templates_complete"
	TriggerReservationReleased = "reservation_released"
	TriggerPodGroupChange      = "podgroup_change"
	TriggerDomainFailed        = "domain_failed"
)

// Placement group results (ome_scheduler_placement_group_total{result}).
const (
	GroupPlaced  = "placed"
	GroupNoFit   = "no_fit"
	GroupUnwound = "unwound"
)

// Placement outcomes (ome_scheduler_gang_placement_total{outcome}).
const (
	OutcomeSingleDomain = "single_domain"
	OutcomeSplit        = "split"
	OutcomeSplitRefused = "split_refused"
)

var (
	PlacementTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_placement_total",
		Help:           "Gang placement outcomes (single_domain, split, split_refused): admitted gangs verified in one domain, admitted gangs found across domains (must stay 0), PreFilter refusals of gangs whose members already sit in several domains.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome"})
	DomainMemberRoom = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_domain_member_room",
		Help:           "Members of the last planned gang's shape that each domain's nodes can take, from the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "domain"})
	DomainHeld = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_domain_held",
		Help:           "Whether a forming gang holds the domain (1) or not (0).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "domain"})
	StrandedCapacity = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_stranded_capacity",
		Help:           "Free units of the planned gang's largest extended resource in domains whose member room is below the smallest pending gang's need, at the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key", "resource"})
	LargestPlaceableGang = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "ome_scheduler_largest_placeable_gang",
		Help:           "Largest domain member room, in members of the planned gang's shape, at the latest gang planning over all nodes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"topology_key"})
	FormationDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Name:           "ome_scheduler_gang_formation_duration_seconds",
		Help:           "Seconds from the creation of a gang's minMember-th member to the Permit admission of the gang.",
		Buckets:        metrics.ExponentialBucketsRange(0.01, 600, 17),
		StabilityLevel: metrics.ALPHA,
	})
)

// registerQualityMetrics is called once per process from Register.
func registerQualityMetrics() {
	legacyregistry.MustRegister(PlacementTotal, DomainMemberRoom, DomainHeld, StrandedCapacity, LargestPlaceableGang, FormationDuration)
	for _, o := range []string{OutcomeSingleDomain, OutcomeSplit, OutcomeSplitRefused} {
		PlacementTotal.WithLabelValues(o).Add(0)
	}
}

var (
	PinTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_pin_total",
		Help:           "Gang domain-placement decisions by result (pinned, preferred, pinned_after_filter, no_fit, reserved, adopted, nominated, stale_replan, topology_replan).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	GateTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_gate_total",
		Help:           "Permit gate evaluations by result (wait, admit).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	ActivationTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_activation_total",
		Help:           "Explicit pod activations by trigger (permit, templates_complete, reservation_released, podgroup_change, domain_failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"trigger"})
	UnwindTotal = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "ome_scheduler_gang_unwind_total",
		Help:           "Gang attempts unwound: commitments released with their waiting members rejected.",
		StabilityLevel: metrics.ALPHA,
	})
	GroupTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ome_scheduler_placement_group_total",
		Help:           "Partner placement group decisions by result (placed, no_fit, unwound).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	PinnedGroups = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "ome_scheduler_pinned_groups",
		Help:           "Gangs currently pinned to a domain, forming or committed.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// Register registers the contract metrics once per process in the component-base
// legacy registry (served on the scheduler's /metrics) and creates every documented series.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(PinTotal, GateTotal, ActivationTotal, UnwindTotal, PinnedGroups, GroupTotal)
		for _, r := range []string{GroupPlaced, GroupNoFit, GroupUnwound} {
			GroupTotal.WithLabelValues(r).Add(0)
		}
		for _, r := range []string{PinPinned, PinPreferred, PinPinnedAfterFilter, PinNoFit, PinReserved, PinAdopted, PinNominated, PinStaleReplan, PinTopologyReplan} {
			PinTotal.WithLabelValues(r).Add(0)
		}
		for _, r := range []string{"wait", "admit"} {
			GateTotal.WithLabelValues(r).Add(0)
		}
		for _, t := range []string{TriggerPermit, TriggerTemplatesComplete, TriggerReservationReleased, TriggerPodGroupChange, TriggerDomainFailed} {
			ActivationTotal.WithLabelValues(t).Add(0)
		}
		UnwindTotal.Add(0)
		PinnedGroups.Set(0)
		registerQualityMetrics()
		registerPreemptionMetrics()
		registerDegradedMetrics()
		registerPaceMetrics()
		registerLabelMetrics()
	})
}

func CountPin(result string) { PinTotal.WithLabelValues(result).Inc() }
