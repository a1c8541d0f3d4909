package trace

import (
	"fmt"
	"io"
	"strconv"
)

// Generated traces for benchmarks and the streaming test: row i arrives at
// i·100 ms with prompt 100 + (i·7919 mod 4000) tokens and output
// 1 + (i·104729 mod 500) tokens (7919 and 104729 are primes, so the lengths
// vary without pattern a short test would notice).

func genPrompt(i int) int { return 100 + (i*7919)%4000 }
func genOutput(i int) int { return 1 + (i*104729)%500 }

func genHeader(f Format) string {
	switch f {
	case Azure:
		return "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	case BurstGPT:
		return "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	case Lengths:
		return "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
	case Servesim:
		return "arrival_s,prompt_tokens,output_tokens,class,ttft_slo_ms,tpot_slo_ms,prefix,prefix_block_tokens\n"
	}
	return "" // Mooncake: JSONL, no header
}

// appendRow appends row i of a generated trace in format f.
func appendRow(b []byte, f Format, i int) []byte {
	ms := int64(i) * 100 // arrival in ms
	p, o := genPrompt(i), genOutput(i)
	switch f {
	case Azure:
		sec := 18*3600 + ms/1000
		day := 16 + sec/86400
		sec %= 86400
		b = fmt.Appendf(b, "2023-11-%02d %02d:%02d:%02d.%03d0000,%d,%d\n", day, sec/3600, sec/60%60, sec%60, ms%1000, p, o)
	case BurstGPT:
		model := "ChatGPT"
		if i%4 == 3 {
			model = "GPT-4"
		}
		b = fmt.Appendf(b, "%d.%d,%s,%d,%d,%d,Conversation log\n", ms/1000, ms%1000/100, model, p, o, p+o)
	case Lengths:
		b = fmt.Appendf(b, "%d,%d,%d,%.4f\n", p, o, p+o, float64(p)/float64(o))
	case Servesim:
		class := "chat"
		if i%3 == 0 {
			class = "summarize"
		}
		b = fmt.Appendf(b, "%d.%03d,%d,%d,%s,500,50,%d %d,16\n", ms/1000, ms%1000, p, o, class, i%100, i)
	case Mooncake:
		b = fmt.Appendf(b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, ms, p, o)
		nb := (p + 511) / 512
		for j := 0; j < nb; j++ {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendInt(b, int64(j*1000+i%50), 10)
		}
		b = append(b, "]}\n"...)
	}
	return b
}

// genTrace returns an n-row trace in format f (header included).
func genTrace(f Format, n int) []byte {
	b := []byte(genHeader(f))
	for i := 0; i < n; i++ {
		b = appendRow(b, f, i)
	}
	return b
}

// genReader streams an n-row generated trace without holding it: rows are
// formatted as they are read.
type genReader struct {
	f    Format
	n, i int
	buf  []byte
	off  int
}

func newGenReader(f Format, n int) *genReader {
	return &genReader{f: f, n: n, buf: []byte(genHeader(f))}
}

func (g *genReader) Read(p []byte) (int, error) {
	for g.off == len(g.buf) {
		if g.i == g.n {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		for k := 0; k < 256 && g.i < g.n; k++ {
			g.buf = appendRow(g.buf, g.f, g.i)
			g.i++
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}
