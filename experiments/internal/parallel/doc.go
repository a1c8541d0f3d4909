// Package parallel runs independent jobs on a pool of workers for the
// experiments packages (sweep points, planner and placement candidates).
// It imports only the standard library.
package parallel
