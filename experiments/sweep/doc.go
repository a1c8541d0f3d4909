// Package sweep runs experiment files: a base scenario and axes of values
// (and seeds) expanded into points, each resolved and run by package
// scenario, their metrics in results.csv.
//
// It owns the experiment file and its checks, sweep directories (point
// files, resume, the directory lock), shards (--shard, from a batch
// system's environment) and the merge of shard results. It may import
// package experiments (the embedded examples), scenario and
// experiments/internal/parallel; never plan or validate.
package sweep
