package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Stats characterizes a trace: what `servesim trace stats` prints.
type Stats struct {
	Name   string `json:"name,omitempty"`
	Format Format `json:"format,omitempty"`
	Counts Counts `json:"counts"` // the reader's counts, when the source is a Reader or a Trace

	Requests int64 `json:"requests"`
	// Timed is false for a length-only trace: the time fields are then 0.
	Timed bool `json:"timed"`
	// DurationS is the span from the first to the last arrival, seconds.
	DurationS float64 `json:"duration_s"`
	// MeanRate is Requests / DurationS, requests per second (0 if the span is 0).
	MeanRate float64 `json:"mean_rate"`
	// PeakPerMin is the most requests in one minute, counting minutes
	// [0, 60 s), [60 s, 120 s), ... from the first arrival; PeakMinuteS is
	// that minute's start. MeanPerMin is 60·MeanRate.
	MeanPerMin  float64 `json:"mean_per_min"`
	PeakPerMin  int64   `json:"peak_per_min"`
	PeakMinuteS float64 `json:"peak_minute_s"`
	// GapCV is the coefficient of variation of the inter-arrival gaps:
	// population standard deviation over mean (1 for a Poisson process, 0
	// for constant gaps; NaN with fewer than 2 gaps or a zero mean gap).
	GapCV float64 `json:"gap_cv"`

	Input  LengthStats `json:"input"`
	Output LengthStats `json:"output"`

	// Prefix reuse, when the trace has prefix block hashes (Mooncake
	// hash_ids): of all PrefixBlocks block hashes, PrefixReused had appeared
	// in an earlier request (or earlier in the same one), i.e. would hit an
	// unbounded prefix cache. PrefixReuse = PrefixReused / PrefixBlocks;
	// PrefixKnown is false when no request had hashes.
	PrefixKnown  bool    `json:"prefix_known"`
	PrefixBlocks int64   `json:"prefix_blocks"`
	PrefixReused int64   `json:"prefix_reused"`
	PrefixReuse  float64 `json:"prefix_reuse"`

	// Classes counts requests per class (servesim traces and mixes), when any has one.
	Classes map[string]int64 `json:"classes,omitempty"`
	// BadRows are the first errors of skipped rows, as text.
	BadRows []string `json:"bad_rows,omitempty"`
}

// LengthStats summarizes a token-length column: exact percentiles by linear
// interpolation between order statistics (numpy's default, as the metrics
// package computes latency percentiles).
type LengthStats struct {
	Mean float64 `json:"mean"`
	Min  int     `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  int     `json:"max"`
	Sum  int64   `json:"sum"`
}

// Characterize drains src and computes its Stats. Arrival-time statistics
// stream in O(1) memory; the exact length percentiles keep every length (4
// bytes per request per column) and prefix reuse keeps a set of the block
// hashes seen. A source that has Counts (Reader, Trace) contributes them.
func Characterize(src workload.Source) (Stats, error) {
	var st Stats
	var in, out []int32
	var r workload.Request
	var first, prev sim.Time
	var gapMean, gapM2 float64 // Welford
	var nGaps int64
	var bin, binCount int64 = -1, 0
	seen := make(map[uint64]struct{})
	for src.Next(&r) {
		if st.Requests == 0 {
			first, prev = r.Arrival, r.Arrival
		} else {
			g := (r.Arrival - prev).Seconds()
			nGaps++
			d := g - gapMean
			gapMean += d / float64(nGaps)
			gapM2 += d * (g - gapMean)
			prev = r.Arrival
		}
		st.Requests++
		if b := int64((r.Arrival - first) / (60 * sim.Second)); b != bin {
			bin, binCount = b, 0
		}
		binCount++
		if binCount > st.PeakPerMin {
			st.PeakPerMin = binCount
			st.PeakMinuteS = float64(bin * 60)
		}
		in = append(in, int32(r.PromptTokens))
		out = append(out, int32(r.OutputTokens))
		if len(r.Prefix) > 0 {
			st.PrefixKnown = true
			for _, h := range r.Prefix {
				st.PrefixBlocks++
				if _, ok := seen[h]; ok {
					st.PrefixReused++
				} else {
					seen[h] = struct{}{}
				}
			}
		}
		if r.Class != "" {
			if st.Classes == nil {
				st.Classes = make(map[string]int64)
			}
			st.Classes[r.Class]++
		}
	}
	if err := workload.SourceErr(src); err != nil {
		return st, err
	}
	if c, ok := src.(interface{ Counts() Counts }); ok {
		st.Counts = c.Counts()
	}
	if b, ok := src.(interface{ BadRows() []error }); ok {
		for _, e := range b.BadRows() {
			st.BadRows = append(st.BadRows, e.Error())
		}
	}
	if t, ok := src.(interface{ Timed() bool }); ok {
		st.Timed = t.Timed()
	} else {
		st.Timed = prev > first
	}
	if f, ok := src.(interface{ Format() Format }); ok {
		st.Format = f.Format()
	}
	if st.Timed {
		st.DurationS = (prev - first).Seconds()
		if st.DurationS > 0 {
			st.MeanRate = float64(st.Requests) / st.DurationS
		}
		st.MeanPerMin = 60 * st.MeanRate
		st.GapCV = math.NaN()
		if nGaps >= 2 && gapMean > 0 {
			st.GapCV = math.Sqrt(gapM2/float64(nGaps)) / gapMean
		}
	} else {
		st.PeakPerMin, st.PeakMinuteS = 0, 0
	}
	st.Input, st.Output = lengthStats(in), lengthStats(out)
	if st.PrefixBlocks > 0 {
		st.PrefixReuse = float64(st.PrefixReused) / float64(st.PrefixBlocks)
	}
	return st, nil
}

// lengthStats sorts x and summarizes it.
func lengthStats(x []int32) LengthStats {
	if len(x) == 0 {
		return LengthStats{}
	}
	slices.Sort(x)
	var l LengthStats
	for _, v := range x {
		l.Sum += int64(v)
	}
	l.Mean = float64(l.Sum) / float64(len(x))
	l.Min, l.Max = int(x[0]), int(x[len(x)-1])
	l.P50, l.P90, l.P99 = quantile(x, 0.5), quantile(x, 0.9), quantile(x, 0.99)
	return l
}

// quantile is numpy.percentile's default ("linear"): position q·(n−1) in
// the sorted sample, interpolated between its neighbours.
func quantile(sorted []int32, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return float64(sorted[len(sorted)-1])
	}
	f := pos - float64(lo)
	a, b := float64(sorted[lo]), float64(sorted[lo+1])
	return a + (b-a)*f
}

// StatsFile reads a trace file and characterizes it.
func StatsFile(path string, o ReaderOptions) (Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	rd, err := NewReader(f, path, o)
	if err != nil {
		return Stats{}, err
	}
	st, err := Characterize(rd)
	st.Name = path
	return st, err
}

// ClassNames returns the classes of st in sorted order.
func (st *Stats) ClassNames() []string {
	names := make([]string, 0, len(st.Classes))
	for k := range st.Classes {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// MarshalJSON writes st with an undefined GapCV (NaN) as null, which
// encoding/json cannot write as a number.
func (st Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	v := struct {
		plain
		GapCV *float64 `json:"gap_cv"`
	}{plain: plain(st)}
	if !math.IsNaN(st.GapCV) && st.Timed {
		v.GapCV = &st.GapCV
	}
	return json.Marshal(v)
}
