package msg

import (
	"fmt"
	"slices"
	"strings"
)

// Every status text OMEGangPack produces. Texts are an interface (docs/reference.md lists them):
// tests and users match on these prefixes.

const (
	ReaderUnavailable     = "PodGroup reader is unavailable"
	TopologyNotConfigured = "scheduler must configure topologyKey or podGroupTopologyKeyAnnotation for gang pods"
	PartnerGroups         = "partner placement groups are not supported"
	NodeReserved          = "node is reserved for a forming gang"
	ReservationReleased   = "gang reservation released after all candidate nodes were filtered"
	OutsideDeferredPlan   = "selected node is outside the deferred gang plan"
	DomainUnavailable     = "selected gang domain became unavailable before Reserve"
	NoPreFilterState      = "labeled gang pod reached Permit without validated PreFilter state"
	TimeoutNotConfigured  = "gang permit timeout is not configured"
	ReservedSuffix        = ": every fitting domain is reserved for a forming gang"
	// BindInDoubt: the node's last binding failed after admission and may have happened
	// anyway; the node is avoided until the pod's fate is known (at most 30 s).
	BindInDoubt = "node has a binding in doubt after an API error"
	// NotCandidate: a pinned member (or a spread anchor with a deferred plan) was offered a
	// node outside the candidates its PreFilter planned, as kube-scheduler does when it tries a
	// pod's nominated node first.
	NotCandidate = "node is not among the gang member's planned candidate nodes"
	// NodesChanged: the cycle waited for the bind window and every node changed meanwhile, so
	// the cycle's snapshot no longer describes any of them; the pod is retried on those events.
	NodesChanged = "every node changed while the cycle waited for the bind window"
)

func NotResolvable(ns, name string) string {
	return fmt.Sprintf("PodGroup %s/%s not resolvable yet", ns, name)
}

func MinMember(ns, name string) string {
	return fmt.Sprintf("PodGroup %s/%s must declare a positive minMember", ns, name)
}

func MissingTopologyKey(ns, name, annotation string) string {
	return fmt.Sprintf("PodGroup %s/%s must declare %s or the scheduler must configure topologyKey", ns, name, annotation)
}

func TimeoutMissing(ns, name string) string {
	return fmt.Sprintf("PodGroup %s/%s must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds", ns, name)
}

func OwnerReleased(key string) string {
	return "released commitment owned by a previous PodGroup instance " + key
}

func TopologyReleased(key string) string {
	return "released commitment after topology key changed for " + key
}

// StaleReleased extends the contract: a forming pin whose domain vanished (relabelled or
// removed nodes) while members waited at Permit is unwound, like an owner or topology-key change.
func StaleReleased(domain, key string) string {
	return fmt.Sprintf("released commitment after pinned domain %s changed for %s", domain, key)
}

// NodeLeftDomain extends the contract: the member completing a gang found its own node or a
// waiter's node relabelled out of the pinned domain (or deleted) after its cycle's snapshot;
// the attempt is unwound and the gang plans again.
func NodeLeftDomain(node, key string) string {
	return fmt.Sprintf("gang %s not admitted: node %s left the pinned domain while the gang formed; the attempt is unwound", key, node)
}

func Split(key string) string {
	return fmt.Sprintf("gang %s already has members in multiple topology domains", key)
}

func Templates(key string, count, need int) string {
	return fmt.Sprintf("waiting for all PodGroup member templates for %s: %d of %d members exist", key, count, need)
}

func SiblingWait(ns, pod string) string {
	return fmt.Sprintf("waiting for gang sibling %s/%s to be placed", ns, pod)
}

func AnchorWait(ns, pod string) string {
	return fmt.Sprintf("waiting for gang spread anchor %s/%s to be placed", ns, pod)
}

func PinnedShort(domain, key string, room, need int) string {
	return fmt.Sprintf("pinned domain %s cannot fit all remaining gang members %s: room for %d of %d members", domain, key, room, need)
}

func AdoptedShort(domain, key string, room, need int) string {
	return fmt.Sprintf("adopted domain %s cannot fit remaining gang members %s: room for %d of %d members", domain, key, room, need)
}

// Degraded is the wait of a replacement whose gang is bound in domain with fewer than
// minMember live members: the domain has room for room of the missing members. It follows
// PinnedShort's or AdoptedShort's text after ": " and is the GangDegraded event's message.
func Degraded(key, domain string, room, missing int) string {
	return fmt.Sprintf("gang %s is bound in domain %s, which has room for %d of %d missing members", key, domain, room, missing)
}

// ShortDegraded is PinnedShort's or AdoptedShort's text with the room part replaced by the
// degraded reason (short is the text up to ": room for").
func ShortDegraded(short, degraded string) string {
	if i := strings.Index(short, ": room for "); i >= 0 {
		short = short[:i]
	}
	return short + ": " + degraded
}

// ReasonGangDegraded is the reason of the Warning event on the PodGroup of a degraded gang
// that cannot be repaired in its domain.
const ReasonGangDegraded = "GangDegraded"

// NoCandidate reports whether PostFilter's preemption message says nothing could be evicted
// (not a wait for victims or for Terminating pods).
func NoCandidate(message string) bool {
	return strings.HasPrefix(message, PreemptPrefix) && !strings.HasPrefix(message, PreemptPrefix+"waiting for ")
}

func AdoptReserved(domain, key string) string {
	return fmt.Sprintf("adopted domain %s for gang %s", domain, key) + AdoptReservedInfix
}

func NoRoomPrefix(key string) string {
	return "no domain has room for gang " + key
}

func NoRoomBest(key, domain string, room, need int) string {
	return fmt.Sprintf("%s: the best domain %s has room for %d of %d members", NoRoomPrefix(key), domain, room, need)
}

// NoRoomDevices: the gang would fit domain by resources, but not by the DRA devices its
// members request (classes, comma-separated).
func NoRoomDevices(key, classes, domain string, room, need int) string {
	return fmt.Sprintf("%s: insufficient devices of class %s in domain %s: room for %d of %d members (its resources alone would take them)", NoRoomPrefix(key), classes, domain, room, need)
}

// DevicesUnknown: the members' DRA claims cannot be counted (a missing claim template or
// device class, a claim that cannot be read).
func DevicesUnknown(key string, err error) string {
	return fmt.Sprintf("gang %s waits: its members' devices cannot be counted: %v", key, err)
}

func NoRoomNoLabel(key, topologyKey string) string {
	return fmt.Sprintf("%s: no node has label %s", NoRoomPrefix(key), topologyKey)
}

// AdoptReservedInfix identifies AdoptReserved.
const AdoptReservedInfix = " is reserved for another forming gang"

// GangReserves is one reserving gang in ReservedBy.
func GangReserves(gang string, members, nodes int, domain string) string {
	unit := "nodes"
	if nodes == 1 {
		unit = "node"
	}
	return fmt.Sprintf("%s reserves %d members on %d %s of %s", gang, members, nodes, unit, domain)
}

// ReservedBy is PostFilter's explanation of a wait caused by other gangs' reservations.
func ReservedBy(parts []string, more int) string {
	s := "Room is reserved for forming gangs: " + strings.Join(parts, "; ")
	if more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s + "."
}

func NoRoomResting(key, domain string) string {
	return fmt.Sprintf("%s: domain %s rests after the gang's reservation there expired", NoRoomPrefix(key), domain)
}

func NoRoomReserved(key string) string {
	return NoRoomPrefix(key) + ReservedSuffix
}

func NoCandidates(key string, fitting int) string {
	return fmt.Sprintf("no domain has candidate nodes for gang %s: %d domains fit but no node can take this member", key, fitting)
}

func NoFeasibleNode(domain, key string) string {
	return fmt.Sprintf("pinned domain %s has no node feasible for gang member %s", domain, key)
}

func OutsideDomain(domain string) string {
	return "node not in gang's pinned domain " + domain
}

func WaitEndsSoon(key string) string {
	return fmt.Sprintf("gang %s not admitted: a member's Permit wait ends within a second; the attempt is unwound", key)
}

func Unwound(key string) string {
	return fmt.Sprintf("gang %s unwound after a member failed to schedule", key)
}

// MinMemberReleased: the PodGroup's minMember changed while the gang formed; the attempt
// planned for the old size is unwound and the gang re-plans for the new one.
func MinMemberReleased(key string) string {
	return "released commitment after minMember changed for " + key
}

// TwoProfiles is the startup error when two profiles of one scheduler enable the plugin.
const TwoProfiles = "OMEGangPack is enabled in more than one scheduler profile: enable it in one profile only (its pins and holds would not see each other)"

// KeyNotAllowed: the PodGroup names a topology key outside allowedTopologyKeys.
func KeyNotAllowed(ns, name, key string, allowed []string, fallback string) string {
	keys := slices.Clone(allowed)
	if fallback != "" && !slices.Contains(keys, fallback) {
		keys = append(keys, fallback)
	}
	slices.Sort(keys)
	return fmt.Sprintf("PodGroup %s/%s names topology key %s, which the scheduler does not allow (allowed: %s)", ns, name, key, strings.Join(keys, ", "))
}

// HoldCap: the namespace already has as many forming gangs holding domains as allowed.
func HoldCap(ns string, holds int) string {
	return fmt.Sprintf("namespace %s already has %d forming gangs holding domains, the most maxHoldsPerNamespace allows", ns, holds)
}

// Preemption explanations: PostFilter's message when a gang or pod that lacks room does not
// preempt. kube-scheduler appends PostFilter's message to the FailedScheduling text, so each
// starts with "; preemption: " and the visible message ends with it.
const (
	PreemptPrefix         = "; preemption: "
	ReasonNoLowerPriority = "no lower-priority pods to evict"
	ReasonPreemptNever    = "preemptionPolicy is Never"
)

// Budget violations are allowed (ranked last among candidates, as kube-scheduler's default
// preemption does), so no wait is ever explained by "every candidate would violate a
// PodDisruptionBudget".

// ReasonNoDomain: evicting every lower-priority unit still leaves no single domain (node, for
// a standalone pod) with room for the preemptor.
func ReasonNoDomain(need int) string {
	return fmt.Sprintf("evicting lower-priority pods would not free one domain for %d members", need)
}

// PreemptWaiting: the preemptor already evicted victims for a domain and waits for them to
// terminate; it does not preempt again meanwhile.
func PreemptWaiting(n int, domain string) string {
	return fmt.Sprintf("%swaiting for %d preempted pods to terminate in domain %s", PreemptPrefix, n, domain)
}

// PreemptRoomComing: no domain (node) has room now, but one would once the Terminating
// pods there are gone; the gang or pod waits for that room and evicts nobody.
func PreemptRoomComing(n int, domain string) string {
	return fmt.Sprintf("%swaiting for %d terminating pods to give back room in domain %s", PreemptPrefix, n, domain)
}

// Preempted is the Preempted event on each victim.
func Preempted(kind, ns, name, domain string) string {
	return fmt.Sprintf("Preempted by %s %s/%s to place it in domain %s", kind, ns, name, domain)
}

// Partner placement groups (partners.go, partners_plan.go, partners_anchor.go).

func GroupWait(group string, ready, size int) string {
	return fmt.Sprintf("waiting for placement group %s: %d of %d PodGroups ready", group, ready, size)
}

func GroupDisagree(group, annotation string) string {
	return fmt.Sprintf("placement group %s: PodGroups disagree on %s", group, annotation)
}

func GroupTooMany(group, annotation string, found, size int) string {
	return fmt.Sprintf("%s: %d PodGroups carry the group label, the size is %d", GroupDisagree(group, annotation), found, size)
}

func GroupSize(group, annotation string) string {
	return fmt.Sprintf("placement group %s: %s must be an integer of at least 2", group, annotation)
}

func GroupSizeTooLarge(group, annotation string, max int) string {
	return fmt.Sprintf("%s: at most %d partners are supported", GroupSize(group, annotation), max)
}

func GroupKeyInvalid(group, annotation, value string) string {
	return fmt.Sprintf("placement group %s: %s %q is not a valid node label key", group, annotation, value)
}

func GroupNoRoomPrefix(group string) string {
	return "no domain has room for placement group " + group
}

func GroupNoRoomBest(group, domain string, room, need int) string {
	return fmt.Sprintf("%s: the best domain %s has room for %d of %d members", GroupNoRoomPrefix(group), domain, room, need)
}

func GroupNoRoomNoLabel(group, key string) string {
	return fmt.Sprintf("%s: no node has label %s", GroupNoRoomPrefix(group), key)
}

func GroupNoRoomReserved(group string) string {
	return GroupNoRoomPrefix(group) + ReservedSuffix
}

// GroupNoRoomTruncated: the group planner's search reached its bound in every group
// domain where it did not find a fit (topology/partners_queue.go).
func GroupNoRoomTruncated(group, domain string) string {
	return fmt.Sprintf("%s: the search for a placement stopped at its limit in domain %s", GroupNoRoomPrefix(group), domain)
}

// GroupStraddles: a partner's pin or placed members span several group domains.
func GroupStraddles(group, gang, key string, values []string) string {
	return fmt.Sprintf("placement group %s: partner %s spans domains %s of %s; a partner must stay inside one group domain", group, gang, strings.Join(values, ", "), key)
}

// GroupSplit: pinned or placed partners sit in different group domains.
func GroupSplit(group, key string, values []string) string {
	return fmt.Sprintf("placement group %s: partners sit in different domains %s of %s", group, strings.Join(values, ", "), key)
}

// GroupAnchorNoLabel: a pinned or placed partner's node lacks the group key.
func GroupAnchorNoLabel(group, gang, key string) string {
	return fmt.Sprintf("placement group %s: partner %s sits on a node without label %s", group, gang, key)
}

// OutsideGroupDomain: Filter's refusal of a node outside a partner's group domain.
func OutsideGroupDomain(domain string) string {
	return "node not in placement group's pinned domain " + domain
}
