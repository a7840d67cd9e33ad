// Package wire is the document the scheduler serves about its pins on /configz and
// `kubectl ome` reads: the scheduler builds it (Wire), the CLI decodes it (Decode). It holds
// no planning, so the scheduler's import graph does not carry the CLI's.
package wire

import (
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
)

// DebugKey is the entry of the scheduler's /configz document that carries its pins and room
// reservations (docs/reference.md, "Reservations endpoint").
const DebugKey = "omeGangPack"

// Reservations is what the scheduler serves about the pins it holds in memory: only the
// leader has any (a standby serves an empty list with Leader false).
type Reservations struct {
	// Leader is true once this replica has run a scheduling cycle: only the leader does.
	Leader bool `json:"leader"`
	// Args are the plugin's arguments as the scheduler runs with them.
	Args *gang.Args `json:"args,omitempty"`
	// Pins are the gangs' pins, sorted by gang key.
	Pins []Pin `json:"pins"`
	// Assumed are the gang members the scheduler placed on a node that are not bound yet
	// (waiting at Permit, or binding): the API server shows them unscheduled.
	Assumed []AssumedPod `json:"assumed"`
}

// AssumedPod is one member placed on a node in the scheduler's memory only.
type AssumedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node"`
	// Stale is set for a member of an attempt that already ended: it occupies its node until
	// the scheduler unreserves it, but is no placed member of its gang.
	Stale bool `json:"stale,omitempty"`
}

// Pin is one gang's pin: forming (members still to place, room reserved) or committed.
type Pin struct {
	Gang        string `json:"gang"`
	TopologyKey string `json:"topologyKey"`
	Domain      string `json:"domain"`
	Attempt     uint64 `json:"attempt"`
	Owner       string `json:"owner,omitempty"`
	Remaining   int    `json:"remaining"`
	MinMember   int    `json:"minMember"`
	Forming     bool   `json:"forming"`
	// Deadline is when the forming gang's hold expires (absent when none is armed).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Reserved is the member room the forming gang holds, per node.
	Reserved []ReservedSlot `json:"reserved,omitempty"`
}

// ReservedSlot is the room a pin reserves on one node: Members copies of Each.
type ReservedSlot struct {
	Node    string           `json:"node"`
	Members int              `json:"members"`
	Each    map[string]int64 `json:"each"`
}

// ReservedMembers is how many members the pin reserves room for.
func (p Pin) ReservedMembers() int {
	n := 0
	for _, s := range p.Reserved {
		n += s.Members
	}
	return n
}

// Wire turns the ledger's pins and assumed members into the served document.
func Wire(holds []ledger.Held, assumed []ledger.Assumed, leader bool, args *gang.Args) Reservations {
	out := Reservations{Leader: leader, Args: args, Pins: make([]Pin, 0, len(holds)), Assumed: make([]AssumedPod, 0, len(assumed))}
	for _, a := range assumed {
		out.Assumed = append(out.Assumed, AssumedPod{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID), Node: a.Node, Stale: a.Stale})
	}
	for _, h := range holds {
		c := h.Commitment
		p := Pin{Gang: c.Gang, TopologyKey: c.Key, Domain: c.Domain, Attempt: c.ID, Owner: c.Owner,
			Remaining: c.Remaining, MinMember: c.MinMember, Forming: c.Forming()}
		if !h.Deadline.IsZero() {
			d := h.Deadline.UTC()
			p.Deadline = &d
		}
		for node, s := range c.Reserved {
			if s.Count > 0 {
				p.Reserved = append(p.Reserved, ReservedSlot{Node: node, Members: s.Count, Each: s.Each})
			}
		}
		sort.Slice(p.Reserved, func(i, j int) bool { return p.Reserved[i].Node < p.Reserved[j].Node })
		out.Pins = append(out.Pins, p)
	}
	return out
}

// Decode reads the served document out of a /configz response.
func Decode(configz []byte) (*Reservations, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(configz, &doc); err != nil {
		return nil, err
	}
	raw, ok := doc[DebugKey]
	if !ok {
		return nil, errNoEntry
	}
	var r Reservations
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

var errNoEntry = errors.New("the scheduler's /configz has no " + DebugKey + " entry (not an ome-scheduler, or an older one)")
