package placement

// PinGroup records one commitment per request, all or none, under one lock: the partners of
// a placement group pin together. Each request is checked like Pin (the gang must not be
// pinned yet; a forming commitment's reservation must fit next to every other gang's, the
// partners pinned earlier in the same call included, so two partners never count the same
// free slot). On the first refusal nothing is recorded and the outcome says why
// (AlreadyPinned or HeldByOther) with the index of the refused request.
func (s *Store) PinGroup(reqs []PinRequest) ([]Commitment, PinOutcome, int) {
	out, outcome, at := s.pinGroup(reqs)
	if outcome == Pinned && len(out) > 0 {
		s.changed()
	}
	return out, outcome, at
}

func (s *Store) pinGroup(reqs []PinRequest) ([]Commitment, PinOutcome, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var added []*Commitment
	undo := func() {
		for _, c := range added {
			delete(s.pins, c.Gang)
			if c.Forming() {
				s.unindex(c)
				s.undoHold(c)
			}
		}
	}
	for i, r := range reqs {
		if _, ok := s.pins[r.Gang]; ok {
			undo()
			return nil, AlreadyPinned, i
		}
		rem := max(r.Remaining, 0)
		if rem > 0 && !s.fits(r.Gang, r.Reserved, r.Capacity) {
			undo()
			return nil, HeldByOther, i
		}
		s.add(&Commitment{Gang: r.Gang, Key: r.Key, Domain: r.Domain, Owner: r.Owner,
			Reserved: r.Reserved, Remaining: rem, SoleFit: r.SoleFit, MinMember: r.MinMember, Within: r.Within})
		added = append(added, s.pins[r.Gang])
	}
	out := make([]Commitment, len(added))
	for i, c := range added {
		out[i] = c.clone()
	}
	return out, Pinned, -1
}

// undoHold reverses hold's aggregates (domains, keys, the forming count); unhold adds the
// generation move, which a commitment that never became visible does not need. Callers hold
// s.mu and unindex first.
func (s *Store) undoHold(c *Commitment) {
	ref := DomainRef{c.Key, c.Domain}
	if s.heldDomains[ref]--; s.heldDomains[ref] <= 0 {
		delete(s.heldDomains, ref)
	}
	if s.heldKeys[c.Key]--; s.heldKeys[c.Key] <= 0 {
		delete(s.heldKeys, c.Key)
	}
	s.forming.Add(-1)
}
