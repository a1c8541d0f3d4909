package policies

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sgView is a hand-built instance state for the SGLang scheduler: pages
// of one token (SGLang's page_size 1), and the running requests' output.
type sgView struct {
	fakeView
	left, generated, output, preempts int64
}

func (v *sgView) BlocksFor(c Candidate, n int) int { return n + c.Pinned }
func (v *sgView) DecodeLeft(int) int64             { return v.left }
func (v *sgView) DecodeTotals() (gen, out int64)   { return v.generated, v.output }
func (v *sgView) Preemptions() int64               { return v.preempts }
func wo(id int64, prompt, out int) Candidate       { return Candidate{ID: id, Target: prompt, Output: out} }
func sglangAt(ratio float64, mixed bool) *SGLang {
	p := (&SGLang{Ratio: SGLangRatio{Init: ratio, Min: ratio}, MaxPrefillTokens: SGLangMaxPrefillTokens, Chunked: true, Mixed: mixed, PageSize: 1}).PerInstance()
	return p.(*SGLang)
}

// TestSGLangAdmission checks PrefillAdder's arithmetic: a request is
// admitted while prompt + min(output, 4096) + 1 page < free − ratio × the
// running requests' clipped output left − what earlier admissions took.
func TestSGLangAdmission(t *testing.T) {
	lim := Limits{MaxNumSeqs: 100, MaxNumBatchedTokens: 8192}
	for _, c := range []struct {
		name  string
		ratio float64
		mixed bool
		v     sgView
		want  string
	}{
		// 400 + 100 + 1 = 501 < 1000: in, 499 left; the second's 501 ≥ 499: NO_TOKEN.
		{"budget", 0.7, false, sgView{fakeView: fakeView{free: 1000, waiting: []Candidate{wo(1, 400, 100), wo(2, 400, 100), wo(3, 10, 10)}}}, "prefill[q#1:400]"},
		// 1000 − 0.5 × 800 = 600 > 501: admitted, and the decodes wait (separate batches).
		{"ratio 0.5", 0.5, false, sgView{fakeView: fakeView{running: 4, decoding: 4, free: 1000, waiting: []Candidate{wo(1, 400, 100)}}, left: 800}, "prefill[q#1:400]"},
		// 1000 − 0.7 × 800 = 440 ≤ 501: NO_TOKEN, so the decodes run.
		{"ratio 0.7", 0.7, false, sgView{fakeView: fakeView{running: 4, decoding: 4, free: 1000, waiting: []Candidate{wo(1, 400, 100)}}, left: 800}, "decode"},
		// Ratio 0: only the new request's own output is reserved: 1000 > 501.
		{"ratio 0", 0, false, sgView{fakeView: fakeView{running: 4, decoding: 4, free: 1000, waiting: []Candidate{wo(1, 400, 100)}}, left: 800}, "prefill[q#1:400]"},
		// The output reserved is clipped at 4096: 800 + 4096 + 1 = 4897 < 5000.
		{"clip", 0.7, false, sgView{fakeView: fakeView{free: 5000, waiting: []Candidate{wo(1, 800, 10000)}}}, "prefill[q#1:800]"},
		// A cached prefix it locks leaves the budget: 501 ≥ 1000 − 600.
		{"pinned", 0.7, false, sgView{fakeView: fakeView{running: 1, decoding: 1, free: 1000, waiting: []Candidate{{ID: 1, Target: 400, Output: 100, Pinned: 600}}}}, "decode"},
		// Longer than the chunk: cut at 8192, then the chunk is spent (OTHER).
		{"chunk", 0.7, false, sgView{fakeView: fakeView{free: 100000, waiting: []Candidate{wo(1, 10000, 100), wo(2, 10, 10)}}}, "prefill[q#1:8192]"},
		// The partial prefill first: its last 1808 tokens, then 6384 of the next.
		{"partial first", 0.7, false, sgView{fakeView: fakeView{running: 1, free: 100000,
			prefilling: []Candidate{{ID: 5, Computed: 8192, Target: 10000, Output: 50}}, waiting: []Candidate{wo(1, 9000, 10)}}}, "prefill[r#5:1808 q#1:6384]"},
		// max_running_requests: 100 decoding, no room: decode.
		{"full", 0.7, false, sgView{fakeView: fakeView{running: 100, decoding: 100, free: 100000, waiting: []Candidate{wo(1, 10, 10)}}}, "decode"},
		// Mixed: the decodes join, and take their tokens from the chunk: 8192 − 2.
		{"mixed", 0.7, true, sgView{fakeView: fakeView{running: 2, decoding: 2, free: 100000, waiting: []Candidate{wo(1, 9000, 10)}}}, "decode+prefill[q#1:8190]"},
		// A request alone on an idle instance whose prompt fits is let in
		// even when prompt + output + 1 is not below the free tokens.
		{"lone", 0.7, false, sgView{fakeView: fakeView{free: 500, waiting: []Candidate{wo(1, 400, 100)}}}, "prefill[q#1:400]"},
	} {
		p := sglangAt(c.ratio, c.mixed)
		var d Decision
		p.Batch(&c.v, lim, &d)
		if got := d.String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestSGLangRatio follows new_token_ratio: 0.7 at start, less
// (0.7 − 0.098) / 600 a decode step down to 0.098, min(1, (generated +
// 20 × n) / (max_new + 1)) after a retraction, 0.7 again when idle.
func TestSGLangRatio(t *testing.T) {
	r := NewSGLangRatio(1)
	if want := (SGLangRatio{Init: 0.7, Min: 0.098, Decay: 0.602 / 600}); math.Abs(r.Init-want.Init)+math.Abs(r.Min-want.Min)+math.Abs(r.Decay-want.Decay) > 1e-12 {
		t.Fatalf("NewSGLangRatio(1) = %+v, want %+v", r, want)
	}
	if r2 := NewSGLangRatio(2); r2.Init != 1 || math.Abs(r2.Min-0.14) > 1e-12 { // min(1.4, 1) = 1; 1 × 0.14
		t.Errorf("NewSGLangRatio(2) = %+v, want init 1, floor 0.14", r2)
	}
	p := (&SGLang{Ratio: r, MaxPrefillTokens: SGLangMaxPrefillTokens, Chunked: true, PageSize: 1}).PerInstance().(*SGLang)
	v := &sgView{fakeView: fakeView{running: 10, decoding: 10, free: 1 << 20}}
	lim := Limits{MaxNumSeqs: 100, MaxNumBatchedTokens: 8192}
	step := func() {
		var d Decision
		p.Batch(v, lim, &d)
	}
	step() // the first decode: no step has ended yet
	if p.NewTokenRatio() != 0.7 {
		t.Fatalf("ratio %g before any decode step ended, want 0.7", p.NewTokenRatio())
	}
	step()
	if want := 0.7 - 0.602/600; math.Abs(p.NewTokenRatio()-want) > 1e-12 {
		t.Errorf("ratio after one decode step %g, want %g", p.NewTokenRatio(), want)
	}
	for range 700 {
		step()
	}
	if math.Abs(p.NewTokenRatio()-0.098) > 1e-12 {
		t.Errorf("ratio after 701 decode steps %g, want the floor 0.098", p.NewTokenRatio())
	}
	v.preempts, v.generated, v.output = 1, 100, 1000
	step() // (100 + 20 × 10) / 1001
	if want := 300.0 / 1001; math.Abs(p.NewTokenRatio()-want) > 1e-12 {
		t.Errorf("ratio after a retraction %g, want %g", p.NewTokenRatio(), want)
	}
	v.running, v.decoding = 0, 0
	step()
	if p.NewTokenRatio() != 0.7 {
		t.Errorf("ratio when idle %g, want 0.7", p.NewTokenRatio())
	}
}

// TestSGLangNeverOvercommits: on seeded random states, a prefill batch's
// tokens and the prefixes it locks fit the free KV tokens; with ratio 0
// each admitted whole request's prompt + clipped output + 1 fits what the
// ones before it left. Replay: go test ./policies -run TestSGLangNeverOvercommits.
func TestSGLangNeverOvercommits(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	lim := Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 4096}
	for i := range 2000 {
		v := &sgView{fakeView: fakeView{free: rng.IntN(20000)}}
		v.decoding = rng.IntN(8)
		v.running = v.decoding
		v.left = int64(v.decoding * rng.IntN(500))
		for j := rng.IntN(6); j > 0; j-- {
			v.waiting = append(v.waiting, Candidate{ID: int64(j), Target: 1 + rng.IntN(6000), Output: 1 + rng.IntN(6000), Pinned: rng.IntN(50)})
		}
		ratio := []float64{0, 0.3, 0.7}[i%3]
		p := sglangAt(ratio, false)
		var d Decision
		p.Batch(v, lim, &d)
		used, reserved := 0, 0.0
		for _, c := range d.Prefill {
			w := v.waiting[c.Index]
			used += c.Tokens + w.Pinned
			if ratio == 0 && c.Tokens == w.Left() {
				reserved += float64(w.Left() + min(w.Output, SGLangClipMaxNewTokens) + 1 + w.Pinned)
			}
		}
		lone := v.running == 0 && len(d.Prefill) == 1
		if used > v.free && !lone {
			t.Fatalf("state %d: %v uses %d tokens of %d free", i, &d, used, v.free)
		}
		if ratio == 0 && reserved >= float64(v.free)+1 && !lone {
			t.Fatalf("state %d: %v reserves %g tokens of %d free at ratio 0", i, &d, reserved, v.free)
		}
	}
}

// TestSGLangFullClears: a NO_TOKEN marks the batch full, so no prefill is
// tried while the running requests stay; it clears when they shrink, and
// when nothing runs (or an idle instance would never admit again).
func TestSGLangFullClears(t *testing.T) {
	p := sglangAt(0.7, false)
	lim := Limits{MaxNumSeqs: 100, MaxNumBatchedTokens: 8192}
	v := &sgView{fakeView: fakeView{running: 2, decoding: 2, free: 300, waiting: []Candidate{wo(1, 400, 100)}}}
	var d Decision
	p.Batch(v, lim, &d) // 501 ≥ 300: NO_TOKEN, full at 2 running
	v.free = 100000
	d.Reset()
	p.Batch(v, lim, &d)
	if got := d.String(); got != "decode" {
		t.Errorf("full batch, 2 running: %s, want decode", got)
	}
	v.running, v.decoding = 1, 1
	d.Reset()
	p.Batch(v, lim, &d)
	if got := d.String(); got != "prefill[q#1:400]" {
		t.Errorf("after a request finished: %s, want prefill[q#1:400]", got)
	}
	q := sglangAt(0.7, false)
	v = &sgView{fakeView: fakeView{free: 300, waiting: []Candidate{wo(1, 400, 100)}}}
	d.Reset()
	q.Batch(v, lim, &d) // nothing running, the prompt's 400 blocks not free: full at 0
	v.free = 1000
	d.Reset()
	q.Batch(v, lim, &d)
	if got := d.String(); got != "prefill[q#1:400]" {
		t.Errorf("idle, then room: %s, want prefill[q#1:400]", got)
	}
}
