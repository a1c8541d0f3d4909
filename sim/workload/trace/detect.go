package trace

import (
	"fmt"
	"strings"
)

// Format detection from a trace's first line.

// detectJSON picks Mooncake or servesim from the first object's keys.
func (rd *Reader) detectJSON(line []byte) error {
	s := jscan{b: line}
	var mooncake, native bool
	if e := s.open(); !e.failed() {
		for first := true; ; first = false {
			k, _, more, e := s.key(first)
			if e.failed() || !more {
				break
			}
			switch string(k) {
			case "input_length", "output_length", "hash_ids", "timestamp":
				mooncake = true
			case "arrival_s", "prompt_tokens", "output_tokens":
				native = true
			}
			if e := s.skip(string(k), 0); e.failed() {
				break
			}
		}
	}
	want := rd.opt.Format
	switch {
	case want == Mooncake || want == Servesim:
		rd.format = want
	case want != Auto:
		return fmt.Errorf("trace: %s:1: format %s is CSV but the file holds JSON objects", rd.name, want)
	case mooncake && !native:
		rd.format = Mooncake
	case native && !mooncake:
		rd.format = Servesim
	default:
		return fmt.Errorf("trace: %s:1: cannot tell the format from the first JSON object: Mooncake has input_length, output_length, timestamp; servesim has arrival_s, prompt_tokens, output_tokens (name one with --format)", rd.name)
	}
	rd.timed = true
	return nil
}

// detectCSV reads the header and maps the columns.
func (rd *Reader) detectCSV(header []byte) error {
	fields, _, e := splitCSV(header, nil, nil, make([]byte, 0, len(header)))
	if e.failed() {
		return fmt.Errorf("trace: %s:1:%d: header: %s", rd.name, e.col, e.msg)
	}
	names := make([]string, len(fields))
	idx := make(map[string]int, len(fields))
	for i, f := range fields {
		n := strings.ToLower(strings.TrimSpace(string(f)))
		names[i] = string(f)
		if _, dup := idx[n]; dup && n != "" {
			return fmt.Errorf("trace: %s:1: header: column %q appears twice", rd.name, string(f))
		}
		idx[n] = i
	}
	has := func(cols ...string) bool {
		for _, c := range cols {
			if _, ok := idx[c]; !ok {
				return false
			}
		}
		return true
	}
	need := map[Format][]string{
		Azure:    {"timestamp", "contexttokens", "generatedtokens"},
		BurstGPT: {"timestamp", "model", "request tokens", "response tokens", "log type"},
		Lengths:  {"num_prefill_tokens", "num_decode_tokens"},
		Servesim: {"arrival_s", "prompt_tokens", "output_tokens"},
	}
	f := rd.opt.Format
	if f == Mooncake {
		return fmt.Errorf("trace: %s:1: format mooncake is JSONL but the first line is not a JSON object", rd.name)
	}
	if f == Auto {
		for _, k := range []Format{Azure, BurstGPT, Lengths, Servesim} {
			if has(need[k]...) {
				f = k
				break
			}
		}
		if f == Auto {
			return fmt.Errorf("trace: %s:1: cannot tell the format from the header %q: Azure has TIMESTAMP,ContextTokens,GeneratedTokens; BurstGPT Timestamp,Model,Request tokens,Response tokens,Log Type; length-only num_prefill_tokens,num_decode_tokens; servesim arrival_s,prompt_tokens,output_tokens (Mooncake and servesim JSONL start with '{')", rd.name, string(header))
		}
	} else {
		for _, c := range need[f] {
			if _, ok := idx[c]; !ok {
				return fmt.Errorf("trace: %s:1: header has no column %q, which format %s needs (header: %q)", rd.name, c, f, string(header))
			}
		}
	}
	rd.format = f
	col := func(name string) int {
		if i, ok := idx[name]; ok {
			return i
		}
		return -1
	}
	c := columns{time: -1, model: -1, logType: -1, class: -1, ttft: -1, tpot: -1, prefix: -1, prefixBlock: -1, names: names, timeUnitExp: 9}
	switch f {
	case Azure:
		c.time, c.prompt, c.output = col("timestamp"), col("contexttokens"), col("generatedtokens")
	case BurstGPT:
		c.time, c.prompt, c.output = col("timestamp"), col("request tokens"), col("response tokens")
		c.model, c.logType = col("model"), col("log type")
	case Lengths:
		c.time, c.prompt, c.output = col("arrived_at"), col("num_prefill_tokens"), col("num_decode_tokens")
	case Servesim:
		known := map[string]*int{
			"arrival_s": &c.time, "prompt_tokens": &c.prompt, "output_tokens": &c.output,
			"class": &c.class, "ttft_slo_ms": &c.ttft, "tpot_slo_ms": &c.tpot,
			"prefix": &c.prefix, "prefix_block_tokens": &c.prefixBlock,
		}
		for i, n := range names {
			p, ok := known[strings.ToLower(strings.TrimSpace(n))]
			if !ok {
				return fmt.Errorf("trace: %s:1: header: unknown column %q for format servesim (known: arrival_s, prompt_tokens, output_tokens, class, ttft_slo_ms, tpot_slo_ms, prefix, prefix_block_tokens)", rd.name, n)
			}
			*p = i
		}
		if (c.prefix >= 0) != (c.prefixBlock >= 0) {
			return fmt.Errorf("trace: %s:1: header: columns prefix and prefix_block_tokens go together", rd.name)
		}
	}
	rd.col = c
	rd.ncols = len(fields)
	rd.timed = c.time >= 0
	return nil
}
