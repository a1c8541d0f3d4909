// Package plan searches deployments of a scenario: the capacity planner
// (the cheapest GPU type, layout and replica count that meets the SLOs at
// a rate) and the placement search (the best goodput per GPU on a GPU
// budget, colocated or disaggregated), with the bounds that prune them
// before they simulate.
//
// It owns the layouts it proposes (tp × pp × dp × ep) and the search's
// tables. It may import scenario, hardware, models and
// experiments/internal/parallel; never sweep or validate.
package plan
