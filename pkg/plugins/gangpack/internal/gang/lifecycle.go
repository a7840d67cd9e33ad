package gang

import (
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Unwind causes (gangpack.unwind cause field).
const (
	CauseUnreserve       = "unreserve"
	CausePostFilter      = "postfilter"
	CauseGC              = "gc"
	CausePodGroupMissing = "podgroup_missing"
	CauseOwnerChange     = "owner_change"
	CauseTopologyChange  = "topology_change"
	// CauseStalePin: the pinned domain vanished or lost its room, or a placed member's node
	// left it, while members waited.
	CauseStalePin = "stale_pin"
	// CauseMinMemberChange: the PodGroup's minMember changed while the gang formed.
	CauseMinMemberChange = "min_member_change"
	// CauseExpired: a hold reached the gang's effective timeout.
	CauseExpired = "expired"
	// CausePreempted: the gang was a preemption victim, or held room a preemptor needed.
	CausePreempted = "preempted"
)

// Drop is how a pin is dropped, as PreFilter's revalidation decided it.
type Drop struct {
	// Cause is the unwind cause logged when the pin is unwound.
	Cause string
	// Always unwinds (counted, waiters rejected) even when no member waits at Permit; without
	// it a pin nobody waits under is released silently.
	Always bool
	// Stale, when set, counts a stale_replan with this cause.
	Stale string
	// NewKey, when set, counts a topology_replan from the pin's key to NewKey.
	NewKey string
	// ClearOwner forgets the failed domains of the pin's (previous) owner.
	ClearOwner bool
}

// Reading is what a scheduling cycle's planning reads of the ledger first.
type Reading struct {
	// Generation is the pin store's hold generation: it changes whenever room is given back.
	Generation uint64
	// Others is what every other forming gang reserves, per node.
	Others map[string]placement.Reserved
	// Placed are the gang's live members placed on the snapshot's nodes.
	Placed []Placed
	// Pin is the gang's pin (nil: none).
	Pin *placement.Commitment
	// Failed are the domains of the gang's topology key its owner's attempts failed in.
	Failed map[string]struct{}
	// Now is the ledger's clock when the cycle began.
	Now time.Time
}
