package trace

import (
	"strings"
	"unicode/utf8"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Row parsing, one function per format.

// parseCSV splits a CSV row and reads the format's columns. It returns the
// row's time in ns (absolute; Azure's already relative to the first row)
// and whether the BurstGPT filter keeps it.
func (rd *Reader) parseCSV(line []byte, r *workload.Request) (t int64, keep bool, e rowErr) {
	if cap(rd.scratch) < len(line) {
		rd.scratch = make([]byte, 0, 2*len(line))
	}
	rd.fields, rd.offs, e = splitCSV(line, rd.fields, rd.offs, rd.scratch)
	if e.failed() {
		return 0, false, e
	}
	if len(rd.fields) != rd.ncols {
		return 0, false, bad(len(line)+1, "", "%d fields, the header has %d", len(rd.fields), rd.ncols)
	}
	c := &rd.col
	f, off := rd.fields, rd.offs
	count := func(i int, dst *int) rowErr {
		v, ok := parseCount(f[i])
		if !ok {
			return bad(off[i]+1, c.names[i], "%s is not a whole number of tokens in 0..2147483647", quoteField(f[i]))
		}
		*dst = v
		return rowErr{}
	}
	if e = count(c.prompt, &r.PromptTokens); e.failed() {
		return 0, false, e
	}
	if e = count(c.output, &r.OutputTokens); e.failed() {
		return 0, false, e
	}
	keep = true
	switch rd.format {
	case Azure:
		wt, at, want := parseWallTime(f[c.time])
		if at >= 0 {
			return 0, false, bad(off[c.time]+at+1, c.names[c.time], "%s: want %s (timestamps look like 2023-11-16 18:17:03.9799600)", quoteField(f[c.time]), want)
		}
		if !rd.started {
			rd.base = wt
		}
		d, ok := wt.sub(rd.base)
		if !ok {
			return 0, false, bad(off[c.time]+1, c.names[c.time], "%s is centuries from the first row", quoteField(f[c.time]))
		}
		if d < 0 { // before the first row: report as going backwards
			return 0, false, bad(off[c.time]+1, c.names[c.time], "time goes backwards: %s is before the first row", quoteField(f[c.time]))
		}
		t = d
	case BurstGPT:
		if t, e = rd.seconds(c.time); e.failed() {
			return 0, false, e
		}
		keep = (rd.opt.Model == "" || strings.EqualFold(string(f[c.model]), rd.opt.Model)) &&
			(rd.opt.LogType == "" || strings.EqualFold(string(f[c.logType]), rd.opt.LogType))
	case Lengths:
		if c.time >= 0 {
			if t, e = rd.seconds(c.time); e.failed() {
				return 0, false, e
			}
		}
	case Servesim:
		if t, e = rd.seconds(c.time); e.failed() {
			return 0, false, e
		}
		if c.class >= 0 {
			if e = rd.intern(f[c.class], off[c.class]+1, r); e.failed() {
				return 0, false, e
			}
		}
		for _, s := range [...]struct {
			i   int
			dst *sim.Time
		}{{c.ttft, &r.TTFTSLO}, {c.tpot, &r.TPOTSLO}} {
			if s.i < 0 || len(f[s.i]) == 0 {
				continue
			}
			ns, ok := parseDuration(f[s.i], 6)
			if !ok {
				return 0, false, bad(off[s.i]+1, c.names[s.i], "%s is not a number of milliseconds ≥ 0", quoteField(f[s.i]))
			}
			*s.dst = sim.Time(ns)
		}
		if c.prefix >= 0 && len(f[c.prefix]) > 0 {
			rd.prefix = rd.prefix[:0]
			p := f[c.prefix]
			for i := 0; i < len(p); {
				for i < len(p) && p[i] == ' ' {
					i++
				}
				j := i
				for j < len(p) && p[j] != ' ' {
					j++
				}
				if j > i {
					v, ok := parseUint64(p[i:j])
					if !ok {
						return 0, false, bad(off[c.prefix]+i+1, c.names[c.prefix], "%s is not an unsigned 64-bit integer (prefix hashes are separated by spaces)", quoteField(p[i:j]))
					}
					rd.prefix = append(rd.prefix, v)
				}
				i = j
			}
			bt, ok := parseCount(f[c.prefixBlock])
			if !ok || bt < 1 {
				return 0, false, bad(off[c.prefixBlock]+1, c.names[c.prefixBlock], "%s: a row with a prefix needs a block size ≥ 1 token", quoteField(f[c.prefixBlock]))
			}
			r.Prefix, r.PrefixBlockTokens = rd.prefix, bt
		}
	}
	return t, keep, rowErr{}
}

// seconds reads column i as non-negative decimal seconds, in ns.
func (rd *Reader) seconds(i int) (int64, rowErr) {
	ns, ok := parseDuration(rd.fields[i], rd.col.timeUnitExp)
	if !ok {
		return 0, bad(rd.offs[i]+1, rd.col.names[i], "%s is not a number of seconds ≥ 0", quoteField(rd.fields[i]))
	}
	return ns, rowErr{}
}

// intern sets r.Class to the interned copy of name.
func (rd *Reader) intern(name []byte, col int, r *workload.Request) rowErr {
	if len(name) == 0 {
		return rowErr{}
	}
	if s, ok := rd.classes[string(name)]; ok {
		r.Class = s
		return rowErr{}
	}
	if !utf8.Valid(name) {
		return bad(col, "class", "%s is not valid UTF-8", quoteField(name))
	}
	if len(rd.classes) >= maxClasses {
		return bad(col, "class", "more than %d distinct classes", maxClasses)
	}
	s := string(name)
	rd.classes[s] = s
	r.Class = s
	return rowErr{}
}

// mooncakeKeys are the keys of a Mooncake row, each required.
var mooncakeKeys = [...]string{"timestamp", "input_length", "output_length", "hash_ids"}

// parseMooncake reads {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}.
// Other keys are ignored; the four must each appear once.
func (rd *Reader) parseMooncake(line []byte, r *workload.Request) (t int64, e rowErr) {
	s := jscan{b: line}
	if e = s.open(); e.failed() {
		return 0, e
	}
	var seen [len(mooncakeKeys)]bool
	for first := true; ; first = false {
		k, _, slot, more, e := s.slotKey(first, mooncakeKeys[:], seen[:])
		if e.failed() {
			return 0, e
		}
		if !more {
			break
		}
		if slot < 0 {
			if e := s.skip(string(k), 0); e.failed() {
				return 0, e
			}
			continue
		}
		switch slot {
		case 0:
			if t, e = s.duration("timestamp", 6, "milliseconds"); e.failed() {
				return 0, e
			}
		case 1, 2:
			name := "input_length"
			dst := &r.PromptTokens
			if slot == 2 {
				name, dst = "output_length", &r.OutputTokens
			}
			v, e := s.count(name, "a whole number of tokens")
			if e.failed() {
				return 0, e
			}
			*dst = v
		case 3:
			if rd.prefix, e = s.uintArray("hash_ids", rd.prefix); e.failed() {
				return 0, e
			}
		}
	}
	if e := missingKey(line, mooncakeKeys[:], seen[:]); e.failed() {
		return 0, e
	}
	r.Prefix, r.PrefixBlockTokens = rd.prefix, MooncakeBlockTokens
	if len(rd.prefix) == 0 {
		r.Prefix = nil
	}
	return t, rowErr{}
}

// MooncakeBlockTokens is the block size of Mooncake's hash_ids: "block = 512
// tokens" (FAST25-release/README.md of kvcache-ai/Mooncake; verified on the
// shared traces: len(hash_ids) = ceil(input_length/512) on every row).
const MooncakeBlockTokens = 512

// The keys of a servesim JSONL row, in nativeKeys' order; the first
// nRequired are required, the others optional (and may be null).
const (
	kArrival = iota
	kPrompt
	kOutput
	kClass
	kTTFT
	kTPOT
	kPrefix
	kBlock
	nRequired = kClass
)

// nativeKeys are the keys of a servesim JSONL row.
var nativeKeys = [...]string{kArrival: "arrival_s", kPrompt: "prompt_tokens", kOutput: "output_tokens", kClass: "class",
	kTTFT: "ttft_slo_ms", kTPOT: "tpot_slo_ms", kPrefix: "prefix", kBlock: "prefix_block_tokens"}

// parseNativeJSON reads a servesim JSONL row; unknown keys are errors.
func (rd *Reader) parseNativeJSON(line []byte, r *workload.Request) (t int64, e rowErr) {
	s := jscan{b: line}
	if e = s.open(); e.failed() {
		return 0, e
	}
	var seen [len(nativeKeys)]bool
	block := 0
	for first := true; ; first = false {
		k, kc, slot, more, e := s.slotKey(first, nativeKeys[:], seen[:])
		if e.failed() {
			return 0, e
		}
		if !more {
			break
		}
		if slot < 0 {
			return 0, bad(kc, string(k), "unknown key (known: %s)", strings.Join(nativeKeys[:], ", "))
		}
		name := string(k)
		if slot >= nRequired && s.isNull() {
			continue // optional keys may be null
		}
		switch slot {
		case kArrival, kTTFT, kTPOT:
			exp, unit := 9, "seconds"
			if slot != kArrival {
				exp, unit = 6, "milliseconds"
			}
			ns, e := s.duration(name, exp, unit)
			if e.failed() {
				return 0, e
			}
			switch slot {
			case kArrival:
				t = ns
			case kTTFT:
				r.TTFTSLO = sim.Time(ns)
			default:
				r.TPOTSLO = sim.Time(ns)
			}
		case kPrompt, kOutput, kBlock:
			v, e := s.count(name, "a whole number")
			if e.failed() {
				return 0, e
			}
			switch slot {
			case kPrompt:
				r.PromptTokens = v
			case kOutput:
				r.OutputTokens = v
			default:
				block = v
			}
		case kClass:
			at := s.i + 1
			raw, esc, e := s.str(name)
			if e.failed() {
				return 0, e
			}
			if esc {
				raw = unescape(raw)
			}
			if e := rd.intern(raw, at, r); e.failed() {
				return 0, e
			}
		case kPrefix:
			if rd.prefix, e = s.uintArray(name, rd.prefix); e.failed() {
				return 0, e
			}
			r.Prefix = rd.prefix
		}
	}
	if e := missingKey(line, nativeKeys[:nRequired], seen[:]); e.failed() {
		return 0, e
	}
	if len(r.Prefix) > 0 {
		if block < 1 {
			return 0, bad(len(line)+1, "prefix_block_tokens", "a row with a prefix needs prefix_block_tokens ≥ 1")
		}
		r.PrefixBlockTokens = block
	} else {
		r.Prefix = nil
	}
	return t, rowErr{}
}
