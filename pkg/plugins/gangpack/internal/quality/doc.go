// Package quality keeps the placement-quality gauges. It is observation only: it is fed
// events (Planned, Pending, Bound, HeldChanged) and never calls back into planning or the
// ledger.
package quality
