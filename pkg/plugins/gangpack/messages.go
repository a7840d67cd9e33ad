package gangpack

import "fmt"

// Every status text OMEGangPack produces. Texts are an interface (contract.md §3): tests and
// users match on these prefixes.

const (
	msgReaderUnavailable     = "PodGroup reader is unavailable"                                                      // M01
	msgTopologyNotConfigured = "scheduler must configure topologyKey or podGroupTopologyKeyAnnotation for gang pods" // M04
	msgPartnerGroups         = "partner placement groups are not supported"                                          // M06
	msgNodeReserved          = "node is reserved for a forming gang"                                                 // M22
	msgReservationReleased   = "gang reservation released after all candidate nodes were filtered"                   // M24
	msgOutsideDeferredPlan   = "selected node is outside the deferred gang plan"                                     // M26
	msgDomainUnavailable     = "selected gang domain became unavailable before Reserve"                              // M27
	msgNoPreFilterState      = "labeled gang pod reached Permit without validated PreFilter state"                   // M28
	msgTimeoutNotConfigured  = "gang permit timeout is not configured"                                               // M29
	reservedSuffix           = ": every fitting domain is reserved for a forming gang"                               // M18 = M17 + this
)

func msgNotResolvable(ns, name string) string { // M02
	return fmt.Sprintf("PodGroup %s/%s not resolvable yet", ns, name)
}

func msgMinMember(ns, name string) string { // M03
	return fmt.Sprintf("PodGroup %s/%s must declare a positive minMember", ns, name)
}

func msgMissingTopologyKey(ns, name, annotation string) string { // M05
	return fmt.Sprintf("PodGroup %s/%s must declare %s or the scheduler must configure topologyKey", ns, name, annotation)
}

func msgTimeoutMissing(ns, name string) string { // M07
	return fmt.Sprintf("PodGroup %s/%s must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds", ns, name)
}

func msgOwnerReleased(key string) string { // M08
	return "released commitment owned by a previous PodGroup instance " + key
}

func msgTopologyReleased(key string) string { // M09
	return "released commitment after topology key changed for " + key
}

// msgStaleReleased extends the contract: a forming pin whose domain vanished (relabelled or
// removed nodes) while members waited at Permit is unwound, like M08/M09.
func msgStaleReleased(domain, key string) string {
	return fmt.Sprintf("released commitment after pinned domain %s changed for %s", domain, key)
}

func msgSplit(key string) string { // M10
	return fmt.Sprintf("gang %s already has members in multiple topology domains", key)
}

func msgTemplates(key string, count, need int) string { // M11
	return fmt.Sprintf("waiting for all PodGroup member templates for %s: %d of %d members exist", key, count, need)
}

func msgSiblingWait(ns, pod string) string { // M12
	return fmt.Sprintf("waiting for gang sibling %s/%s to be placed", ns, pod)
}

func msgAnchorWait(ns, pod string) string { // M13
	return fmt.Sprintf("waiting for gang spread anchor %s/%s to be placed", ns, pod)
}

func msgPinnedShort(domain, key string, room, need int) string { // M14
	return fmt.Sprintf("pinned domain %s cannot fit all remaining gang members %s: room for %d of %d members", domain, key, room, need)
}

func msgAdoptedShort(domain, key string, room, need int) string { // M15
	return fmt.Sprintf("adopted domain %s cannot fit remaining gang members %s: room for %d of %d members", domain, key, room, need)
}

func msgAdoptReserved(domain, key string) string { // M16
	return fmt.Sprintf("adopted domain %s for gang %s is reserved for another forming gang", domain, key)
}

func msgNoRoomPrefix(key string) string { // M17
	return "no domain has room for gang " + key
}

func msgNoRoomBest(key, domain string, room, need int) string { // M17 with detail
	return fmt.Sprintf("%s: the best domain %s has room for %d of %d members", msgNoRoomPrefix(key), domain, room, need)
}

func msgNoRoomNoLabel(key, topologyKey string) string { // M17 with detail
	return fmt.Sprintf("%s: no node has label %s", msgNoRoomPrefix(key), topologyKey)
}

func msgNoRoomReserved(key string) string { // M18
	return msgNoRoomPrefix(key) + reservedSuffix
}

func msgNoCandidates(key string, fitting int) string { // M19
	return fmt.Sprintf("no domain has candidate nodes for gang %s: %d domains fit but no node can take this member", key, fitting)
}

func msgNoFeasibleNode(domain, key string) string { // M20
	return fmt.Sprintf("pinned domain %s has no node feasible for gang member %s", domain, key)
}

func msgOutsideDomain(domain string) string { // M23
	return "node not in gang's pinned domain " + domain
}

func msgUnwound(key string) string { // M30
	return fmt.Sprintf("gang %s unwound after a member failed to schedule", key)
}

// msgMinMemberReleased: the PodGroup's minMember changed while the gang formed; the attempt
// planned for the old size is unwound and the gang re-plans for the new one.
func msgMinMemberReleased(key string) string {
	return "released commitment after minMember changed for " + key
}

// msgTwoProfiles is the startup error when two profiles of one scheduler enable the plugin.
const msgTwoProfiles = "OMEGangPack is enabled in more than one scheduler profile: enable it in one profile only (its pins and holds would not see each other)"
