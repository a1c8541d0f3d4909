package serve

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/workload"
)

// TestPositionRatesExpectedTokens checks E = 1 + Σ_i Π_{j≤i} a_j, with a_j
// the conditional acceptance of position j, against vLLM-style marginal
// rates (rate_i = Π_{j≤i} a_j), and that the inverse-CDF draw yields
// exactly those marginals over a uniform grid of u.
func TestPositionRatesExpectedTokens(t *testing.T) {
	for _, c := range []struct {
		cond []float64 // conditional a_j
		want float64
	}{
		// 1 + 0.8 + 0.8·0.75 + 0.8·0.75·0.5 = 1 + 0.8 + 0.6 + 0.3 = 2.7
		{[]float64{0.8, 0.75, 0.5}, 2.7},
		// every draft accepted: k + 1 = 4
		{[]float64{1, 1, 1}, 4},
		// the first rejected: nothing after it counts, 1
		{[]float64{0, 1, 1}, 1},
		// 1 + 0.5 + 0.25 + 0.125 + 0.0625 = 1.9375
		{[]float64{0.5, 0.5, 0.5, 0.5}, 1.9375},
	} {
		rates := make(PositionRates, len(c.cond))
		m := 1.0
		for i, a := range c.cond {
			m *= a
			rates[i] = m
		}
		k := len(rates)
		if err := rates.Validate(k); err != nil {
			t.Fatal(err)
		}
		if got := rates.ExpectedTokens(k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%v: expected tokens %g, want %g", c.cond, got, c.want)
		}
		// Draws over u = (i + 0.5)/n: the mean of 1 + accepted is E to 1/n.
		const n = 100000
		sum := 0
		for i := range n {
			sum += 1 + rates.Accepted(0, "", 0, (float64(i)+0.5)/n, k)
		}
		if got := float64(sum) / n; math.Abs(got-c.want) > 1e-4 {
			t.Errorf("%v: mean tokens over the u grid %g, want %g", c.cond, got, c.want)
		}
	}
}

func TestPositionRatesInvalid(t *testing.T) {
	for _, c := range []struct {
		r    PositionRates
		k    int
		want string
	}{
		{PositionRates{0.5, 0.6}, 2, "cannot rise"},
		{PositionRates{0.5}, 2, "1 acceptance rates for 2"},
		{PositionRates{1.2, 0.5}, 2, "in [0, 1]"},
		{PositionRates{math.NaN()}, 1, "in [0, 1]"},
	} {
		err := c.r.Validate(c.k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v k %d: error %v, want %q", c.r, c.k, err, c.want)
		}
	}
}

// specRun runs n requests of prompt 64 and output out on one instance with
// speculation at k drafts and a free drafter, step time 1000 µs + 10 µs a
// token.
func specRun(t *testing.T, k int, acc Acceptance, n, out int) (Result, *recorder) {
	t.Helper()
	cfg := baseConfig(policies.Chunked{}, 1000, 512)
	var reqs []workload.Request
	for i := range n {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: 0, PromptTokens: 64, OutputTokens: out})
	}
	if k > 0 {
		cfg.Spec = &Speculation{K: k, Accept: acc}
		cfg.Step = &SpecStep{Target: cfg.Step, K: k}
		cfg.Limits.SpecTokens = k
	}
	res, rec, _ := run(t, cfg, reqs)
	return res, rec
}

// TestSpecFullAcceptanceKPlusOne: acceptance 1.0 with a free drafter gives
// k + 1 tokens a verification, so a request of output 1 + 4·(k+1) tokens
// (the first from its prefill) needs exactly 4 verifications.
func TestSpecFullAcceptanceKPlusOne(t *testing.T) {
	for _, k := range []int{1, 3, 5} {
		out := 1 + 4*(k+1)
		res, rec := specRun(t, k, PositionRates(ones(k)), 3, out)
		st := res.Spec
		if st.Drafts != 3*4 || st.Emitted != int64(3*4*(k+1)) || st.Accepted != int64(3*4*k) {
			t.Errorf("k %d: drafts %d emitted %d accepted %d, want 12, %d, %d", k, st.Drafts, st.Emitted, st.Accepted, 12*(k+1), 12*k)
		}
		decodeSteps := 0
		for _, s := range rec.steps {
			if s.Decodes > 0 {
				decodeSteps++
			}
		}
		if decodeSteps != 4 {
			t.Errorf("k %d: %d decode steps, want 4", k, decodeSteps)
		}
		if g := st.MeanAcceptanceLength(); g != float64(k+1) {
			t.Errorf("k %d: mean acceptance length %g, want %d", k, g, k+1)
		}
	}
}

func ones(k int) []float64 {
	r := make([]float64, k)
	for i := range r {
		r[i] = 1
	}
	return r
}

// TestSpecZeroAcceptanceIsPlainDecode: with every draft rejected a
// verification emits one token, so the token timeline equals a run without
// speculation whose step timer prices the same 1 + k query tokens.
func TestSpecZeroAcceptanceIsPlainDecode(t *testing.T) {
	const k, out = 3, 20
	res, rec := specRun(t, k, PositionRates(make([]float64, k)), 4, out)
	if res.Spec.Emitted != res.Spec.Drafts || res.Spec.Accepted != 0 {
		t.Fatalf("emitted %d of %d drafts, accepted %d", res.Spec.Emitted, res.Spec.Drafts, res.Spec.Accepted)
	}
	// 4 requests decode together: out − 1 = 19 verifications each.
	if res.Spec.Drafts != 4*19 {
		t.Errorf("drafts %d, want %d", res.Spec.Drafts, 4*19)
	}
	if res.Finished != 4 || len(rec.recs) != 4 {
		t.Errorf("finished %d", res.Finished)
	}
}

// TestSpecInvariantsRandom runs seeded random workloads with speculation
// under a small KV cache (preemptions) and checks the engine's invariants
// every step (checkAll) and conservation.
func TestSpecInvariantsRandom(t *testing.T) {
	saved := checkAll
	checkAll = true
	defer func() { checkAll = saved }()
	for seed := range uint64(6) {
		cfg := baseConfig(policies.Chunked{}, 60, 256)
		cfg.Spec = &Speculation{K: 1 + int(seed%4), Lookahead: int(seed%3) * (1 + int(seed%4)) / 2, Accept: PositionRates{0.9, 0.7, 0.5, 0.3}}
		cfg.Step = &SpecStep{Target: cfg.Step, K: cfg.Spec.K}
		cfg.Limits.SpecTokens = cfg.Spec.K
		if seed%2 == 1 {
			cfg.PrefixCache = true
		}
		var reqs []workload.Request
		for i := range 40 {
			reqs = append(reqs, workload.Request{ID: int64(i), Arrival: 0, PromptTokens: 20 + int(seed*7+uint64(i)*13)%90, OutputTokens: 1 + int(seed*11+uint64(i)*17)%60})
		}
		res, _, _ := run(t, cfg, reqs)
		if res.Finished != 40 {
			t.Errorf("seed %d: finished %d of 40 (go test ./sim/serve -run TestSpecInvariantsRandom)", seed, res.Finished)
		}
	}
}

// TestSpecStepCost prices a verification on a linear timer: the target's
// batch has 1 + k tokens a decode; an n-gram proposer adds its CPU a
// decode; a drafter adds its passes.
func TestSpecStepCost(t *testing.T) {
	target := linearTimer{base: 1000, perToken: 10}
	b := models.Batch{Decodes: 8, DecodeCtx: 800, DecodeQuery: 4}
	// 1000 + 10·(8·4) = 1320 µs; the n-gram proposer 5 µs × 8 = 40 µs.
	s := &SpecStep{Target: target, K: 3, ProposerCPU: 5e-6}
	if got, _, _ := s.Step(b); math.Abs(got-1360e-6) > 1e-12 {
		t.Errorf("n-gram step %g s, want 1360e-6", got)
	}
	// A drafter of 100 + 1 µs a token: first pass over 32 tokens (132 µs),
	// then 2 passes of 8 tokens (108 µs each): 348 µs on top of 1320.
	s = &SpecStep{Target: target, K: 3, Draft: linearTimer{base: 100, perToken: 1}}
	if got, _, _ := s.Step(b); math.Abs(got-1668e-6) > 1e-12 {
		t.Errorf("drafter step %g s, want 1668e-6", got)
	}
}

func TestCaptureSizesSpec(t *testing.T) {
	for _, c := range []struct {
		seqs, tokens, k int
		want            []int
	}{
		// k = 0: vLLM's defaults (max min(2·4, 512, 8192) = 8): 1, 2, 4, 8
		{4, 8192, 0, []int{1, 2, 4, 8}},
		// k = 3, q = 4: max min(4·4·2, 512) = 32; sizes 1,2,4,8,16,24,32 → multiples of 4: 4, 8, 16, 24, 32
		{4, 8192, 3, []int{4, 8, 16, 24, 32}},
		// k = 2, q = 3: max min(2·3·2, 512) = 12; 1,2,4,8 → 3, 3, 6, 9 (12 not a base size)
		{2, 8192, 2, []int{3, 6, 9}},
	} {
		got := CaptureSizesSpec(c.seqs, c.tokens, c.k)
		if len(got) != len(c.want) {
			t.Errorf("%+v: %v, want %v", c, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%+v: %v, want %v", c, got, c.want)
				break
			}
		}
	}
}

func TestReadAcceptTrace(t *testing.T) {
	tr, err := ReadAcceptTrace(strings.NewReader("# accepted drafts a step\n3 2 0\n\n1,1\n"), "t.txt", 3)
	if err != nil {
		t.Fatal(err)
	}
	// request 0: row 0 cycling 3 2 0 3; request 1: row 1; request 2: row 0.
	for _, c := range []struct{ id, step, want int }{{0, 0, 3}, {0, 1, 2}, {0, 2, 0}, {0, 3, 3}, {1, 5, 1}, {2, 1, 2}} {
		if got := tr.Accepted(int64(c.id), "", c.step, 0, 3); got != c.want {
			t.Errorf("request %d step %d: %d, want %d", c.id, c.step, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"1 4\n", "t.txt:1: field 2: 4 accepted drafts, more than num_speculative_tokens 3"},
		{"1\nx\n", "t.txt:2: field 1 \"x\""},
		{"# only\n", "no requests"},
		{"-1\n", "t.txt:1: field 1"},
	} {
		if _, err := ReadAcceptTrace(strings.NewReader(c.in), "t.txt", 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzReadAcceptTrace(f *testing.F) {
	f.Add([]byte("3 2 0\n1,1\n"), 3)
	f.Add([]byte("#\n\n0\n"), 1)
	f.Add([]byte("9999999999999999999999\n"), 2)
	f.Fuzz(func(t *testing.T, data []byte, k int) {
		k = 1 + int(uint(k)%8)
		tr, err := ReadAcceptTrace(bytes.NewReader(data), "fuzz", k)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "serve: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		for id := range int64(3) {
			for step := range 3 {
				if a := tr.Accepted(id, "", step, 0, k); a < 0 || a > k {
					t.Fatalf("accepted %d outside [0, %d]", a, k)
				}
			}
		}
	})
}

func TestClassRates(t *testing.T) {
	c := ClassRates{Default: PositionRates{0.5, 0.2}, ByClass: map[string]PositionRates{"code": {1, 1}}}
	// u = 0.3: the default accepts position 1 only (0.3 < 0.5, not < 0.2); code both.
	if a := c.Accepted(0, "chat", 0, 0.3, 2); a != 1 {
		t.Errorf("chat: %d, want 1", a)
	}
	if a := c.Accepted(0, "code", 0, 0.3, 2); a != 2 {
		t.Errorf("code: %d, want 2", a)
	}
	bad := &Speculation{K: 2, Accept: ClassRates{Default: PositionRates{0.5, 0.2}, ByClass: map[string]PositionRates{"x": {0.1, 0.5}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `class "x"`) {
		t.Errorf("rising class rates: %v", err)
	}
}

// TestSpecLookaheadAdmission: a request whose last verification's k
// lookahead slots could never fit is rejected on arrival, not preempted
// for ever: 4 blocks of 16 tokens hold 64; prompt 40 + output 24 − 1 = 63
// tokens fit without speculation, 63 + 3 = 66 do not.
func TestSpecLookaheadAdmission(t *testing.T) {
	cfg := baseConfig(policies.Chunked{}, 4, 512)
	reqs := []workload.Request{{ID: 0, PromptTokens: 40, OutputTokens: 24}}
	if res, _, _ := run(t, cfg, reqs); res.Finished != 1 {
		t.Fatalf("without speculation: finished %d", res.Finished)
	}
	cfg.Spec = &Speculation{K: 3, Accept: PositionRates{0.5, 0.3, 0.1}}
	cfg.Limits.SpecTokens = 3
	if res, _, _ := run(t, cfg, reqs); res.Rejected != 1 {
		t.Errorf("with k = 3: rejected %d, finished %d; want rejected", res.Rejected, res.Finished)
	}
	// k = 1 with no lookahead: 63 + 1 = 64 fit; with a lookahead of 1, 65 do not.
	cfg.Spec = &Speculation{K: 1, Accept: PositionRates{0.5}}
	cfg.Limits.SpecTokens = 1
	if res, _, _ := run(t, cfg, reqs); res.Finished != 1 {
		t.Errorf("k = 1: finished %d, want 1", res.Finished)
	}
	cfg.Spec.Lookahead = 1
	if res, _, _ := run(t, cfg, reqs); res.Rejected != 1 {
		t.Errorf("k = 1, lookahead 1: rejected %d, want 1", res.Rejected)
	}
}

// TestSpecVerifyDraftSeconds: the run sums the seconds priced for
// verification and drafting; under the ideal engine a step lasts what the
// step model priced, so the two sum to the steps' durations (to the
// clock's nanoseconds), and a drafter of 100 µs + 1 µs a token takes its
// share.
func TestSpecVerifyDraftSeconds(t *testing.T) {
	cfg := baseConfig(policies.Chunked{}, 1000, 512)
	cfg.Spec = &Speculation{K: 2, Accept: PositionRates{0.6, 0.3}}
	cfg.Step = &SpecStep{Target: cfg.Step, K: 2, Draft: linearTimer{base: 100, perToken: 1}}
	cfg.Limits.SpecTokens = 2
	var reqs []workload.Request
	for i := range 6 {
		reqs = append(reqs, workload.Request{ID: int64(i), PromptTokens: 50, OutputTokens: 30})
	}
	res, rec, _ := run(t, cfg, reqs)
	total := 0.0
	for _, s := range rec.steps {
		total += s.Duration.Seconds()
	}
	st := res.Spec
	if got := st.VerifySeconds + st.DraftSeconds; math.Abs(got-total) > 1e-9*float64(len(rec.steps)) {
		t.Errorf("verify %g + draft %g s = %g, steps last %g s", st.VerifySeconds, st.DraftSeconds, got, total)
	}
	if sh := st.VerifyShare(); !(sh > 0.5 && sh < 1) {
		t.Errorf("verification share %g", sh)
	}
}

// recordTimer records the batch it was asked to price.
type recordTimer struct{ got *models.Batch }

func (r recordTimer) Step(b models.Batch) (float64, float64, float64) {
	*r.got = b
	return 1e-3, 0, 0
}

// TestExpandVerify: V0's batch expansion turns each decode's q = 1 + K
// query tokens into q single-token decodes, row j over the context plus j.
func TestExpandVerify(t *testing.T) {
	for _, c := range []struct {
		in, want models.Batch
	}{
		// 8 decodes, Σc = 800, q = 4: 32 decodes, 4·800 + 8·(4·3/2) = 3248.
		{models.Batch{Decodes: 8, DecodeCtx: 800, DecodeQuery: 4}, models.Batch{Decodes: 32, DecodeCtx: 3248}},
		// q = 2 with a prefill chunk beside: the chunk is left as it is;
		// 3 decodes, Σc = 3·1001: 6 decodes, 2·3003 + 3·1 = 6009.
		{models.Batch{Prefills: 1, PrefillTokens: 512, PrefillCtx: 100, PrefillPairs: 7, Decodes: 3, DecodeCtx: 3003, DecodeQuery: 2},
			models.Batch{Prefills: 1, PrefillTokens: 512, PrefillCtx: 100, PrefillPairs: 7, Decodes: 6, DecodeCtx: 6009}},
		// No speculative decodes (q = 1, or 0): unchanged.
		{models.Batch{Decodes: 5, DecodeCtx: 50, DecodeQuery: 1}, models.Batch{Decodes: 5, DecodeCtx: 50, DecodeQuery: 1}},
		{models.Batch{Prefills: 2, PrefillTokens: 64}, models.Batch{Prefills: 2, PrefillTokens: 64}},
	} {
		got := ExpandVerify(c.in)
		if got != c.want {
			t.Errorf("ExpandVerify(%+v) = %+v, want %+v", c.in, got, c.want)
		}
		if got.Tokens() != c.in.Tokens() {
			t.Errorf("ExpandVerify(%+v) has %d tokens, want %d: expansion keeps the tokens", c.in, got.Tokens(), c.in.Tokens())
		}
		// SpecStep with Expand prices the expanded batch for the target.
		var seen models.Batch
		s := &SpecStep{Target: recordTimer{&seen}, K: max(c.in.Query()-1, 1), Expand: true}
		s.Step(c.in)
		if seen != c.want {
			t.Errorf("SpecStep{Expand} priced %+v, want %+v", seen, c.want)
		}
	}
	// Without Expand (V1) the target prices the verification as it is.
	var seen models.Batch
	b := models.Batch{Decodes: 8, DecodeCtx: 800, DecodeQuery: 4}
	(&SpecStep{Target: recordTimer{&seen}, K: 3}).Step(b)
	if seen != b {
		t.Errorf("SpecStep without Expand priced %+v, want the batch %+v as it is", seen, b)
	}
}
