// Package trace replays real request traces and synthesizes traffic that
// looks like them. Everything here is a workload.Source: the simulator
// cannot tell a trace from a synthetic workload.
//
// # Reading
//
// NewReader reads one trace file lazily, one line at a time, with a
// hand-written CSV splitter and JSON scanner that allocate nothing per row
// (over 1.8 million rows per second on one core for Mooncake's JSON rows,
// over 6 million for Azure's CSV ones; see BenchmarkRead*). The format is
// detected from the first line, or named:
//
//	azure     Azure LLM inference 2023 and 2024 CSV: TIMESTAMP, ContextTokens,
//	          GeneratedTokens; TIMESTAMP is wall-clock ("2023-11-16 18:17:03.9799600",
//	          or with a zone "2024-05-10 00:00:00.009930+00:00"), parsed by hand
//	mooncake  Mooncake JSONL: timestamp (ms), input_length, output_length,
//	          hash_ids (chained hashes of 512-token prompt blocks, which become
//	          Request.Prefix for prefix caching)
//	burstgpt  BurstGPT CSV: Timestamp (s), Model, Request tokens, Response tokens,
//	          Total tokens, Log Type; ReaderOptions.Model and LogType filter rows
//	lengths   length-only CSV (Vidur / Sarathi-Serve's ShareGPT and arXiv files):
//	          num_prefill_tokens, num_decode_tokens, and arrived_at (s) if present
//	servesim  servesim's own CSV or JSONL, below
//
// Arrival times are relative to the first row's timestamp, except in the
// servesim format, which gives them as they are. A length-only trace yields
// every request at 0: Arrivals gives it a synthetic arrival process.
//
// Bad rows are never silent. A malformed row (a field that is not a number,
// a short row, bad JSON, a timestamp before the previous one, no prompt
// tokens, more prefix blocks than the prompt holds) stops the reader with a
// *RowError naming file, line, column and field:
//
//	trace: conv.csv:17:29: field "ContextTokens": "12x" is not a whole number of tokens in 0..2147483647
//
// With SkipBadRows the row is skipped and counted (Counts.Bad; the first
// five errors are kept in BadRows). A row with zero output tokens is a
// failed request (BurstGPT marks failures so): it is dropped and counted
// in Counts.Failed, or with Failed "one" replayed with one output token,
// since the server still read its prompt.
//
// # The servesim format
//
// A CSV file whose header names some of these columns, in any order, or a
// JSONL file of objects with these keys (unknown columns and keys are
// errors, to catch typos):
//
//	arrival_s            arrival time in seconds (required, non-decreasing)
//	prompt_tokens        ≥ 1 (required)
//	output_tokens        ≥ 0 (required; 0 is a failed request, see above)
//	class                traffic class name (optional; at most 1024 distinct)
//	ttft_slo_ms          the request's own TTFT objective (optional)
//	tpot_slo_ms          the request's own TPOT objective (optional)
//	prefix               prefix block hashes: space-separated in CSV, an array in JSONL
//	prefix_block_tokens  tokens per prefix block (required with prefix)
//
// For example
//
//	arrival_s,prompt_tokens,output_tokens,class,ttft_slo_ms,tpot_slo_ms,prefix,prefix_block_tokens
//	0.5,100,10,chat,500,50,,
//	1.25,2000,200,summarize,2000,100,7 8 9,16
//
//	{"arrival_s": 0.5, "prompt_tokens": 100, "output_tokens": 10, "class": "chat", "ttft_slo_ms": 500}
//
// # Transforming
//
// Window, Sample, Limit, Scale, Clip, Repeat and Arrivals wrap a Source and
// stream. Scale keeps the burst shape: it divides every arrival time by a
// factor, so every gap shrinks by the same ratio. Options (a scenario's
// [workload.trace] table) and Open compose them in a fixed order — read,
// synthetic arrivals, window, sample, first N, rate, clip, repeat — and a
// target mean rate (Options.Rate) is reached by a first pass over the file
// that measures the trace's own rate (requests over the span from first to
// last arrival) and sets the factor to target/measured; Options.Scale gives
// the factor directly instead. Repeat reopens the file for each copy.
//
// # Characterizing
//
// Characterize (and StatsFile, behind `servesim trace stats`) reports rows,
// span, mean rate, the peak requests in one minute, the coefficient of
// variation of inter-arrival gaps, exact length percentiles (numpy's
// linear interpolation, like the metrics package), and for Mooncake traces
// the share of prefix blocks seen earlier in the trace.
//
// # Synthesizing
//
// Empirical is the empirical distribution of a trace's lengths (FitLengths,
// or ParseDist("empirical:FILE:prompt")), Zipf a bounded Zipf distribution,
// both workload.Dist. Mix draws requests of several classes (70 % chat with
// ShareGPT's lengths, 30 % summarization with arXiv's, say), each with its
// own lengths and SLOs, setting Request.Class, TTFTSLO and TPOTSLO, with one
// random stream per purpose so that changing one class changes nothing else.
//
// # Memory
//
// Readers and wrappers hold O(1) state; a 10-million-row trace streams
// through a reader, a window, a rate scaling and clipping with under 1 KiB
// allocated in all (TestStream10M). Characterize keeps every length (for
// exact percentiles) and the set of prefix hashes; Empirical keeps the
// distinct lengths.
package trace
