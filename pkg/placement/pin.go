package placement

import "github.com/moirai-internal/ome-scheduler/pkg/topology"

// Making a pin: Choose (best fit over the rooms a planning counted) and Pin (one given domain).

// ChooseRequest asks for a best-fit pin.
type ChooseRequest struct {
	Gang      string
	Owner     string
	Key       string
	Need      int
	MinMember int
	// Rooms is the member room per domain value, counted outside every other gang's
	// reservation (and already without excluded domains).
	Rooms map[string]int
	// Reserve returns the room the gang reserves in a domain value.
	Reserve func(domain string) Reservation
	// Capacity is the free room of the nodes as the planning's snapshot saw it.
	Capacity Capacity
	// Prefer, when set, is each domain's preference: among the fitting domains the highest
	// wins before best fit (topology.BestFitPreferred).
	Prefer func(domain string) int64
	// Rank, when set, breaks ties among equally fitting domains (lower wins).
	Rank func(domain string) int
}

// ChooseResult is what Choose decided.
type ChooseResult struct {
	Commitment Commitment
	// Existing is true when the gang was already pinned (no new commitment).
	Existing bool
	OK       bool
	// Conflict is true when the best-fitting domain's reservation no longer fits next to the
	// other gangs' (the rooms were counted before another gang reserved).
	Conflict bool
}

// Choose pins the gang by best fit over the rooms and records its reservation there. If the
// gang is already pinned it returns that pin when the owner matches, else nothing.
func (s *Store) Choose(r ChooseRequest) ChooseResult {
	res := s.choose(r)
	if res.OK && !res.Existing {
		s.changed()
	}
	return res
}

// choose runs the request's callbacks (Prefer, Rank, Reserve: a ranking and a max-flow over the
// domain) without the lock, so that Filter's ReservedOn, which runs in parallel for every
// node, never waits on them; the pin itself is decided under the lock, where an existing pin
// (another cycle pinned meanwhile) and the capacity check are looked at again.
func (s *Store) choose(r ChooseRequest) ChooseResult {
	if c, ok := s.Get(r.Gang); ok {
		return ChooseResult{Commitment: c, Existing: true, OK: c.Owner == r.Owner}
	}
	d, ok := topology.BestFitPreferred(r.Rooms, r.Need, r.Prefer, r.Rank)
	if !ok {
		return ChooseResult{}
	}
	var res Reservation
	if r.Reserve != nil {
		res = r.Reserve(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.pins[r.Gang]; ok {
		return ChooseResult{Commitment: c.clone(), Existing: true, OK: c.Owner == r.Owner}
	}
	if !s.fits(r.Gang, res, r.Capacity) {
		return ChooseResult{Conflict: true}
	}
	c := s.add(&Commitment{
		Gang: r.Gang, Key: r.Key, Domain: d, Owner: r.Owner, Reserved: res,
		Remaining: r.Need, SoleFit: topology.CountFitting(r.Rooms, r.Need) < 2, MinMember: r.MinMember,
	})
	return ChooseResult{Commitment: c, OK: true}
}

// PinRequest asks for a pin on one given domain (adoption or a deferred plan at Reserve).
type PinRequest struct {
	Gang   string
	Owner  string
	Key    string
	Domain string
	// Reserved is the room the gang reserves in the domain; Capacity checks it.
	Reserved  Reservation
	Capacity  Capacity
	Remaining int
	SoleFit   bool
	MinMember int
	// Within is the commitment's group domain (Commitment.Within).
	Within DomainRef
	// Resumed is Commitment.Resumed.
	Resumed bool
}

// PinOutcome says why Pin did or did not record a commitment.
type PinOutcome int

const (
	// Pinned: a new commitment was recorded.
	Pinned PinOutcome = iota
	// AlreadyPinned: the gang already has a commitment; nothing changed.
	AlreadyPinned
	// HeldByOther: the reservation does not fit next to the other forming gangs'.
	HeldByOther
)

// Pin records a commitment for one given domain unless the gang is already pinned or its
// reservation does not fit next to the other gangs'.
func (s *Store) Pin(r PinRequest) (Commitment, PinOutcome) {
	c, out := s.pin(r)
	if out == Pinned {
		s.changed()
	}
	return c, out
}

func (s *Store) pin(r PinRequest) (Commitment, PinOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.pins[r.Gang]; ok {
		return c.clone(), AlreadyPinned
	}
	rem := r.Remaining
	if rem < 0 {
		rem = 0
	}
	// A committed pin (remaining 0) holds no room: its reservation is dropped, not checked.
	if rem > 0 && !s.fits(r.Gang, r.Reserved, r.Capacity) {
		return Commitment{}, HeldByOther
	}
	c := s.add(&Commitment{Gang: r.Gang, Key: r.Key, Domain: r.Domain, Owner: r.Owner,
		Reserved: r.Reserved, Remaining: rem, SoleFit: r.SoleFit, MinMember: r.MinMember, Within: r.Within, Resumed: r.Resumed})
	return c, Pinned
}
