// Package preempt is gang-aware, topology-aware preemption, behind kube-scheduler's seam: an
// Evaluator that owns its records and evictions and asks the plugin for the policy through a
// small Interface. It imports neither the planner nor the ledger.
package preempt
