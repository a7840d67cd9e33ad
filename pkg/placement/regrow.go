package placement

// Regrow raises remaining of the gang's forming commitment to remaining when id owns it and it
// counts fewer, and returns the commitment and whether it changed. A forming gang keeps
// placed members + remaining ≥ minMember: when a member placed under the attempt goes away
// (deleted, failed, its node removed), the gang needs a replacement before it may commit, and
// the drains that would have committed it short wait for one instead. Its reservation is left
// as it is; the caller brings it up to date with Reserve.
func (s *Store) Regrow(gang string, id uint64, remaining int) (Commitment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pins[gang]
	if !ok || c.ID != id || !c.Forming() || c.Remaining >= remaining {
		return Commitment{}, false
	}
	c.Remaining = remaining
	return c.clone(), true
}
