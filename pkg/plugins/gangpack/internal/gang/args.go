package gang

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxSeconds is the largest number of seconds whose nanoseconds fit a signed 64-bit integer.
const maxSeconds int64 = 9223372036

// Args are OMEGangPack's plugin arguments (pluginConfig entry name: OMEGangPack).
type Args struct {
	// TopologyKey is the fallback node label key that defines domains; "" = none.
	TopologyKey string `json:"topologyKey,omitempty"`
	// PodGroupTopologyKeyAnnotation names the PodGroup annotation whose value is the gang's
	// topology key; "" = no annotation is read.
	PodGroupTopologyKeyAnnotation string `json:"podGroupTopologyKeyAnnotation,omitempty"`
	// UnsupportedPlacementGroupLabel names a label whose presence on a pod or PodGroup is
	// refused (partner placement groups); "" = check disabled.
	UnsupportedPlacementGroupLabel string `json:"unsupportedPlacementGroupLabel,omitempty"`
	// PlacementGroupLabel names the label that makes a gang a partner of a placement group
	// (pods or PodGroup); the annotations named by the label key plus "-size" and
	// "-topology-key" describe the group; "" = partner placement groups off.
	PlacementGroupLabel string `json:"placementGroupLabel,omitempty"`
	// DefaultPermitTimeoutSeconds applies to PodGroups without scheduleTimeoutSeconds.
	DefaultPermitTimeoutSeconds *int64 `json:"defaultPermitTimeoutSeconds,omitempty"`
	// PodGroupSyncTimeoutSeconds bounds the wait for the PodGroup informer's initial sync.
	PodGroupSyncTimeoutSeconds *int64 `json:"podGroupSyncTimeoutSeconds,omitempty"`
	// GCIntervalSeconds is how often dead or re-created gangs' pins are released. Required.
	GCIntervalSeconds *int64 `json:"gcIntervalSeconds,omitempty"`
	// StandaloneDomainPacking steers standalone pods to partly used domains (default true).
	StandaloneDomainPacking *bool `json:"standaloneDomainPacking,omitempty"`
	// GangSoftSpread makes a gang anchor's ScheduleAnyway topology spread constraints break
	// ties between equally fitting domains (default true); false = stock behaviour, where a
	// ScheduleAnyway spread only acts through the PodTopologySpread score.
	GangSoftSpread *bool `json:"gangSoftSpread,omitempty"`
	// AllowedTopologyKeys restricts the topology keys a PodGroup may name through the
	// annotation; empty = any key. TopologyKey is always allowed.
	AllowedTopologyKeys []string `json:"allowedTopologyKeys,omitempty"`
	// MaxHoldsPerNamespace caps the gangs of one namespace that may hold domains at once while
	// they form; 0 or unset = no cap.
	MaxHoldsPerNamespace *int64 `json:"maxHoldsPerNamespace,omitempty"`
	// Preemption turns on gang-aware, topology-aware preemption: a gang (or standalone pod)
	// that fits nowhere evicts whole lower-priority gangs and pods to free one domain (node).
	Preemption bool `json:"preemption,omitempty"`
	// BindWindowMilliseconds paces the scheduling loop to the API: a cycle that would start
	// new work (a standalone pod, a gang not yet planned) waits while more binds are in
	// flight than the binds of the last second drained in this window. Unset = 1000; 0 = off.
	BindWindowMilliseconds *int64 `json:"bindWindowMilliseconds,omitempty"`
	// PlacementLabels lists the node label keys whose values the Binding copies onto every pod
	// the plugin binds (labels the pod already carries are kept). Unset = the pod's topology key
	// (the gang's, or TopologyKey for a standalone pod) and RackLabel; empty = none.
	PlacementLabels []string `json:"placementLabels,omitempty"`
	// DomainPreferences says what orders the domains that fit the whole gang before best fit:
	// NodeAffinity (unset) the members' preferred node affinity, None nothing (best fit alone).
	DomainPreferences string `json:"domainPreferences,omitempty"`
}

// The values of DomainPreferences.
const (
	PreferNodeAffinity = "NodeAffinity"
	PreferNone         = "None"
)

// PrefersNodeAffinity reports whether the members' preferred node affinity orders the domains.
func (a *Args) PrefersNodeAffinity() bool { return a.DomainPreferences != PreferNone }

// RackLabel is the well-known rack label, one of the default placement labels.
const RackLabel = "topology.kubernetes.io/rack"

// PlacementLabelKeys returns the node label keys copied onto a pod whose topology key is
// topologyKey ("" = none).
func (a *Args) PlacementLabelKeys(topologyKey string) []string {
	if a.PlacementLabels != nil {
		return a.PlacementLabels
	}
	if topologyKey == "" || topologyKey == RackLabel {
		return []string{RackLabel}
	}
	return []string{topologyKey, RackLabel}
}

// DefaultBindWindow is the bind window when bindWindowMilliseconds is unset.
const DefaultBindWindow = time.Second

// maxBindWindowMilliseconds is the largest bind window (one minute).
const maxBindWindowMilliseconds = 60_000

// BindWindow returns the bind window; 0 = pacing off.
func (a *Args) BindWindow() time.Duration {
	if a.BindWindowMilliseconds == nil {
		return DefaultBindWindow
	}
	return time.Duration(*a.BindWindowMilliseconds) * time.Millisecond
}

// KeyAllowed reports whether a gang may use topology key key.
func (a *Args) KeyAllowed(key string) bool {
	return len(a.AllowedTopologyKeys) == 0 || key == a.TopologyKey || slices.Contains(a.AllowedTopologyKeys, key)
}

// HoldCap returns the per-namespace cap on forming gangs; 0 = none.
func (a *Args) HoldCap() int {
	if a.MaxHoldsPerNamespace == nil {
		return 0
	}
	return int(*a.MaxHoldsPerNamespace)
}

// SoftSpread reports whether gang soft spread is on.
func (a *Args) SoftSpread() bool {
	return a.GangSoftSpread == nil || *a.GangSoftSpread
}

// PackStandalone reports whether standalone domain packing is on.
func (a *Args) PackStandalone() bool {
	return a.StandaloneDomainPacking == nil || *a.StandaloneDomainPacking
}

// DecodeArgs decodes (strictly: decodeStrict) and validates the plugin arguments. A nil
// object is treated as {}.
func DecodeArgs(obj runtime.Object) (*Args, error) {
	args := &Args{}
	if obj != nil {
		if err := decodeStrict(obj, args); err != nil {
			return nil, fmt.Errorf("decode OMEGangPack args: %w", err)
		}
	}
	if err := ValidateArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}

// ValidateArgs checks the arguments in the contract's fixed order; the first failure wins.
func ValidateArgs(a *Args) error {
	if a.TopologyKey != "" {
		if msgs := validation.IsQualifiedName(a.TopologyKey); len(msgs) > 0 {
			return fmt.Errorf("topologyKey %q is not a valid node label key: %s", a.TopologyKey, msgs[0])
		}
	}
	if a.PodGroupTopologyKeyAnnotation != "" {
		if msgs := validation.IsQualifiedName(a.PodGroupTopologyKeyAnnotation); len(msgs) > 0 {
			return fmt.Errorf("podGroupTopologyKeyAnnotation %q is not a valid metadata key: %s", a.PodGroupTopologyKeyAnnotation, msgs[0])
		}
	}
	if a.UnsupportedPlacementGroupLabel != "" {
		if msgs := validation.IsQualifiedName(a.UnsupportedPlacementGroupLabel); len(msgs) > 0 {
			return fmt.Errorf("unsupportedPlacementGroupLabel %q is not a valid metadata key: %s", a.UnsupportedPlacementGroupLabel, msgs[0])
		}
	}
	if err := validatePlacementGroupLabel(a); err != nil {
		return err
	}
	for _, k := range a.AllowedTopologyKeys {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("allowedTopologyKeys: %q is not a valid node label key: %s", k, msgs[0])
		}
	}
	if err := validatePlacementLabels(a); err != nil {
		return err
	}
	if v := a.DomainPreferences; v != "" && v != PreferNodeAffinity && v != PreferNone {
		return fmt.Errorf("domainPreferences must be %s or %s: %q", PreferNodeAffinity, PreferNone, v)
	}
	if v := a.MaxHoldsPerNamespace; v != nil && (*v < 0 || *v > 1_000_000) {
		return errors.New("maxHoldsPerNamespace must be between 0 and 1000000")
	}
	if v := a.BindWindowMilliseconds; v != nil && (*v < 0 || *v > maxBindWindowMilliseconds) {
		return errors.New("bindWindowMilliseconds must be between 0 and 60000")
	}
	if err := checkSeconds("defaultPermitTimeoutSeconds", a.DefaultPermitTimeoutSeconds); err != nil {
		return err
	}
	if err := checkSeconds("podGroupSyncTimeoutSeconds", a.PodGroupSyncTimeoutSeconds); err != nil {
		return err
	}
	if a.GCIntervalSeconds == nil {
		return errors.New("gcIntervalSeconds must be configured")
	}
	return checkSeconds("gcIntervalSeconds", a.GCIntervalSeconds)
}

func checkSeconds(name string, v *int64) error {
	switch {
	case v == nil:
		return nil
	case *v <= 0:
		return fmt.Errorf("%s must be positive", name)
	case *v > maxSeconds:
		return fmt.Errorf("%s is too large", name)
	}
	return nil
}

// validatePlacementGroupLabel checks placementGroupLabel: a valid metadata key, and not the
// key that unsupportedPlacementGroupLabel refuses (the two would contradict each other).
func validatePlacementGroupLabel(a *Args) error {
	l := a.PlacementGroupLabel
	if l == "" {
		return nil
	}
	if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
		return fmt.Errorf("placementGroupLabel %q is not a valid metadata key: %s", l, msgs[0])
	}
	if msgs := validation.IsQualifiedName(l + GroupTopologySuffix); len(msgs) > 0 {
		return fmt.Errorf("placementGroupLabel %q is too long: annotation %q is not a valid metadata key: %s", l, l+GroupTopologySuffix, msgs[0])
	}
	if l == a.UnsupportedPlacementGroupLabel {
		return fmt.Errorf("placementGroupLabel and unsupportedPlacementGroupLabel must differ: both are %q", l)
	}
	return nil
}

// validatePlacementLabels checks placementLabels: valid label keys, none of them a label the
// plugin reads from pods (copied from a node, it would make a standalone pod a gang member or a
// gang a partner at bind) or writes itself (ome.io/domain, ome.io/placement-group-domain).
func validatePlacementLabels(a *Args) error {
	reserved := map[string]string{
		Label:                 "the pod-group label",
		DomainAnnotation:      "written by the plugin itself",
		GroupDomainAnnotation: "written by the plugin itself",
	}
	if a.PlacementGroupLabel != "" {
		reserved[a.PlacementGroupLabel] = "placementGroupLabel"
	}
	if a.UnsupportedPlacementGroupLabel != "" {
		reserved[a.UnsupportedPlacementGroupLabel] = "unsupportedPlacementGroupLabel"
	}
	for _, k := range a.PlacementLabels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("placementLabels: %q is not a valid label key: %s", k, msgs[0])
		}
		if why, ok := reserved[k]; ok {
			return fmt.Errorf("placementLabels: %q cannot be copied from nodes (%s)", k, why)
		}
	}
	return nil
}
