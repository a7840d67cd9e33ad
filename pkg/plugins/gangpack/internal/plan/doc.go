// Package plan is PreFilter's decision: Planner.Plan revalidates the gang's pin, gates the
// gang (split, members, sibling and anchor waits, partner groups) and chooses its domain,
// and answers preemption's questions without side effects (LacksRoom, HoldRequest). It
// reaches cross-cycle state only through the Ledger interface and preemption only through
// Victims; its own state is its caches derived from the snapshot (the plan cache and the
// domain index).
package plan
