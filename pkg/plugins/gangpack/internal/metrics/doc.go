// Package metrics defines every ome_scheduler_* metric of the plugin and its label values;
// Register registers them once.
package metrics
