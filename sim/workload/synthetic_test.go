package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servesim/servesim/sim"
)

// collect drains src.
func collect(t *testing.T, src Source) []Request {
	t.Helper()
	var out []Request
	var r Request
	for src.Next(&r) {
		out = append(out, r)
	}
	if err := SourceErr(src); err != nil {
		t.Fatalf("source ended with %v", err)
	}
	return out
}

func mustSource(t *testing.T, s Synthetic) Source {
	t.Helper()
	src, err := s.Source()
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// gaps returns the inter-arrival gaps in seconds, the first measured from 0.
func gaps(reqs []Request) []float64 {
	g := make([]float64, len(reqs))
	var prev sim.Time
	for i, r := range reqs {
		g[i] = (r.Arrival - prev).Seconds()
		prev = r.Arrival
	}
	return g
}

func meanCV(x []float64) (mean, cv float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	mean = s / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss/float64(len(x))) / mean
}

// TestArrivalMoments checks the mean gap (1/rate) and its coefficient of
// variation (1/√shape for gamma gaps, 1 for Poisson) on n = 100 000 gaps,
// and runs a Kolmogorov–Smirnov test of the gap sampler against gonum's
// Gamma CDF.
//
// Tolerances by the central limit theorem, for gaps of mean μ, CV c and
// gamma shape k (excess kurtosis 6/k):
//   - sample mean: relative standard error c/√n;
//   - sample std: relative standard error ≈ ½·√((2 + 6/k)/n);
//   - so the sample CV's relative error is at most the sum of the two.
//
// For k = 1, n = 1e5: 1/316.2 + ½·√(8e-5) = 0.00316 + 0.00447 = 0.0076.
// Each check allows 5 such errors. The KS statistic's 0.1 % critical value
// is 1.95/√n = 0.0062. Gaps are rounded to 1 ns, far below the 0.1 s mean.
func TestArrivalMoments(t *testing.T) {
	const n = 100_000
	const rate = 10.0
	tests := []struct {
		arr   Arrival
		shape float64
	}{
		{Arrival{Process: ProcessPoisson, Rate: rate}, 1},
		{Arrival{Rate: rate}, 1}, // "" means poisson
		{Arrival{Process: ProcessGamma, Rate: rate, Burstiness: 1}, 1},
		{Arrival{Process: ProcessGamma, Rate: rate, Burstiness: 0.5}, 0.5},
		{Arrival{Process: ProcessGamma, Rate: rate, Burstiness: 0.1}, 0.1},
		{Arrival{Process: ProcessGamma, Rate: rate, Burstiness: 4}, 4},
	}
	for _, tt := range tests {
		src := mustSource(t, Synthetic{Arrival: tt.arr, Prompt: Constant{1}, Output: Constant{1}, Count: n, Seed: 7})
		g := gaps(collect(t, src))
		mean, cv := meanCV(g)
		wantCV := 1 / math.Sqrt(tt.shape)
		seMean := wantCV / math.Sqrt(n)
		seCV := seMean + 0.5*math.Sqrt((2+6/tt.shape)/n)
		if rel := math.Abs(mean*rate - 1); rel > 5*seMean {
			t.Errorf("%v: mean gap %v s, want %v (relative error %.4f > %.4f)", tt.arr, mean, 1/rate, rel, 5*seMean)
		}
		if rel := math.Abs(cv/wantCV - 1); rel > 5*seCV {
			t.Errorf("%v: gap CV %v, want %v (relative error %.4f > %.4f)", tt.arr, cv, wantCV, rel, 5*seCV)
		}
		// KS on the raw float gaps: arrival times are rounded to 1 ns, and
		// Gamma(0.1) puts P(gap < 1 ns) = (1e-9·rate·k)^k/Γ(k+1) ≈ 0.13 of its
		// mass below that, which rounding would distort.
		// Gamma(shape k, scale 1/(rate·k)) is gonum's Gamma{Alpha: k, Beta: rate·k} (Beta is the rate).
		ref := distuv.Gamma{Alpha: tt.shape, Beta: rate * tt.shape}
		gs := newGapSampler(tt.arr)
		r := rand.New(rand.NewPCG(7, StreamArrivals))
		for i := range g {
			g[i] = gs.next(r)
		}
		slices.Sort(g)
		var d float64
		for i, x := range g {
			f := ref.CDF(x)
			d = max(d, math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n))
		}
		if crit := 1.95 / math.Sqrt(n); d > crit {
			t.Errorf("%v: KS statistic %v > %v", tt.arr, d, crit)
		}
	}
}

func TestGammaSamplerSmallShape(t *testing.T) {
	// Gamma(k, 1) has mean k and variance k. For k = 0.05 and n = 1e5, the
	// mean's standard error is √(0.05/1e5) = 7.1e-4; allow 5 of them.
	const n, k = 100_000, 0.05
	g := newGammaSampler(k)
	r := rand.New(rand.NewPCG(3, 4))
	var s float64
	for range n {
		x := g.sample(r)
		if !(x >= 0) {
			t.Fatalf("gamma sample %v", x)
		}
		s += x
	}
	if m := s / n; math.Abs(m-k) > 5*math.Sqrt(k/n) {
		t.Errorf("mean %v, want %v", m, k)
	}
}

func TestConstantArrivals(t *testing.T) {
	// rate 4: gap 0.25 s, exact in binary, so request i arrives at (i+1)·250 ms.
	src := mustSource(t, Synthetic{Arrival: Arrival{Process: ProcessConstant, Rate: 4}, Prompt: Constant{10}, Output: Constant{20}, Count: 3})
	want := []Request{
		{ID: 0, Arrival: 250 * sim.Millisecond, PromptTokens: 10, OutputTokens: 20},
		{ID: 1, Arrival: 500 * sim.Millisecond, PromptTokens: 10, OutputTokens: 20},
		{ID: 2, Arrival: 750 * sim.Millisecond, PromptTokens: 10, OutputTokens: 20},
	}
	if got := collect(t, src); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// TestNoRoundingDrift: rate 3 gives gaps of 1/3 s, which is 333 333 333.33 ns.
// Rounding each gap to ns before summing would put request 2999 at
// 3000 × 333 333 333 = 999 999 999 000 ns, 1 µs early; summing in float64
// and converting once keeps it within 1 ns of 1000 s (float error of 3000
// additions near 1000 s is ~3000 × 1.1e-13 s = 3.4e-10 s).
func TestNoRoundingDrift(t *testing.T) {
	src := mustSource(t, Synthetic{Arrival: Arrival{Process: ProcessConstant, Rate: 3}, Prompt: Constant{1}, Output: Constant{1}, Count: 3000})
	reqs := collect(t, src)
	last := reqs[len(reqs)-1].Arrival
	if d := last - 1000*sim.Second; d < -1 || d > 1 {
		t.Errorf("request 2999 arrives at %v, want 1000 s ± 1 ns", last)
	}
}

func TestStopRules(t *testing.T) {
	base := Synthetic{Arrival: Arrival{Rate: 100}, Prompt: Normal{500, 100}, Output: LogNormal{5, 1}, Seed: 11}
	long := base
	long.Count = 5000 // expected span 50 s, far beyond the 10 s below
	all := collect(t, mustSource(t, long))
	for i, r := range all {
		if r.ID != int64(i) || (i > 0 && r.Arrival < all[i-1].Arrival) {
			t.Fatalf("request %d: %+v out of order", i, r)
		}
	}
	before := func(d sim.Time) []Request { // the prefix arriving strictly before d
		i := slices.IndexFunc(all, func(r Request) bool { return r.Arrival >= d })
		return all[:i]
	}
	cut := all[500].Arrival // an arrival exactly at Duration is excluded
	tests := []struct {
		name     string
		count    int
		duration sim.Time
		want     []Request
	}{
		{"count", 10, 0, all[:10]},
		{"duration", 0, 10 * sim.Second, before(10 * sim.Second)},
		{"duration at an arrival", 0, cut, all[:500]},
		{"count first", 20, 10 * sim.Second, all[:20]},
		{"duration first", 4000, 10 * sim.Second, before(10 * sim.Second)},
		{"count 1", 1, 0, all[:1]},
	}
	for _, tt := range tests {
		s := base
		s.Count, s.Duration = tt.count, tt.duration
		src := mustSource(t, s)
		got := collect(t, src)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %d requests, want %d (or contents differ)", tt.name, len(got), len(tt.want))
		}
		var r Request
		if src.Next(&r) || src.Next(&r) {
			t.Errorf("%s: Next after the end returned true", tt.name)
		}
	}
	if n := len(before(10 * sim.Second)); n < 900 || n > 1100 {
		// 100 req/s × 10 s = 1000 expected, Poisson sd √1000 = 32: ±100 is > 3 sd.
		t.Errorf("%d arrivals in 10 s at 100 req/s", n)
	}
}

// TestStreamsIndependent is metamorphic: the arrival stream depends only on
// the seed and the arrival process, the prompt lengths only on the seed and
// the prompt distribution, so changing one leaves the others identical.
func TestStreamsIndependent(t *testing.T) {
	base := Synthetic{Arrival: Arrival{Process: ProcessGamma, Rate: 5, Burstiness: 0.5},
		Prompt: Uniform{100, 2000}, Output: LogNormal{5.5, 0.8}, Count: 1000, Seed: 99}
	a := collect(t, mustSource(t, base))
	if b := collect(t, mustSource(t, base)); !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different sequences")
	}
	changedOut := base
	changedOut.Output = Normal{300, 50}
	changedPrompt := base
	changedPrompt.Prompt = Constant{128}
	changedArr := base
	changedArr.Arrival = Arrival{Rate: 1}
	b := collect(t, mustSource(t, changedOut))
	c := collect(t, mustSource(t, changedPrompt))
	d := collect(t, mustSource(t, changedArr))
	outDiffers := false
	for i := range a {
		if a[i].Arrival != b[i].Arrival || a[i].PromptTokens != b[i].PromptTokens {
			t.Fatalf("changing the output distribution changed request %d: %+v vs %+v", i, a[i], b[i])
		}
		if a[i].Arrival != c[i].Arrival || a[i].OutputTokens != c[i].OutputTokens {
			t.Fatalf("changing the prompt distribution changed request %d: %+v vs %+v", i, a[i], c[i])
		}
		if a[i].PromptTokens != d[i].PromptTokens || a[i].OutputTokens != d[i].OutputTokens {
			t.Fatalf("changing the arrival process changed request %d lengths: %+v vs %+v", i, a[i], d[i])
		}
		outDiffers = outDiffers || a[i].OutputTokens != b[i].OutputTokens
	}
	if !outDiffers {
		t.Error("the changed output distribution changed nothing")
	}
	other := base
	other.Seed = 100
	e := collect(t, mustSource(t, other))
	same := 0
	for i := range a {
		if a[i].Arrival == e[i].Arrival {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 99 and 100 share %d of 1000 arrival times", same)
	}
}

func TestLengthClamps(t *testing.T) {
	s := Synthetic{Arrival: Arrival{Rate: 1}, Prompt: Normal{0, 1000}, Output: Uniform{0, 10000},
		Count: 2000, Seed: 5, MaxPrompt: 300, MaxOutput: 64}
	var lowP, highP, highO int
	for _, r := range collect(t, mustSource(t, s)) {
		if r.PromptTokens < 1 || r.PromptTokens > 300 || r.OutputTokens < 1 || r.OutputTokens > 64 {
			t.Fatalf("request %+v out of [1, max]", r)
		}
		lowP += b2i(r.PromptTokens == 1)
		highP += b2i(r.PromptTokens == 300)
		highO += b2i(r.OutputTokens == 64)
	}
	// Normal(0, 1000): P(x < 1.5) ≈ 0.5 → ~1000 at the floor; P(x ≥ 299.5) ≈ 0.38 → ~760 at 300.
	// Uniform(0, 10000): P(x ≥ 63.5) ≈ 0.994 → ~1987 at 64.
	if lowP < 900 || highP < 650 || highO < 1950 {
		t.Errorf("clamp counts: prompt at 1: %d, at 300: %d, output at 64: %d", lowP, highP, highO)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestValidate(t *testing.T) {
	ok := Synthetic{Arrival: Arrival{Rate: 1}, Prompt: Constant{1}, Output: Constant{1}, Count: 1}
	tests := []struct {
		name string
		mod  func(*Synthetic)
		want string // "" = valid
	}{
		{"ok", func(*Synthetic) {}, ""},
		{"duration only", func(s *Synthetic) { s.Count, s.Duration = 0, sim.Second }, ""},
		{"gamma default burstiness", func(s *Synthetic) { s.Arrival.Process = ProcessGamma }, ""},
		{"poisson burstiness 1", func(s *Synthetic) { s.Arrival.Burstiness = 1 }, ""},
		{"zero rate", func(s *Synthetic) { s.Arrival.Rate = 0 }, "workload: arrival rate 0: must be a number > 0"},
		{"inf rate", func(s *Synthetic) { s.Arrival.Rate = math.Inf(1) }, ""},
		{"inf rate gamma", func(s *Synthetic) { s.Arrival.Rate, s.Arrival.Process = math.Inf(1), ProcessGamma }, "arrival rate inf sends every request at time 0"},
		{"inf rate constant", func(s *Synthetic) { s.Arrival.Rate, s.Arrival.Process = math.Inf(1), ProcessConstant }, "arrival rate inf sends every request at time 0"},
		{"inf rate duration", func(s *Synthetic) { s.Arrival.Rate, s.Duration = math.Inf(1), sim.Second }, "rate inf sends every request at time 0: give a count and no duration"},
		{"-inf rate", func(s *Synthetic) { s.Arrival.Rate = math.Inf(-1) }, "arrival rate -Inf"},
		{"stage rate 0", func(s *Synthetic) { s.Count, s.Stages = 0, []Stage{{Rate: 0, Duration: sim.Second}} }, "stage 0: rate 0"},
		{"stage duration 0", func(s *Synthetic) { s.Count, s.Stages = 0, []Stage{{Rate: 1}} }, "stage 0: duration 0"},
		{"stages with count", func(s *Synthetic) { s.Stages = []Stage{{Rate: 1, Duration: sim.Second}} }, "stages set the length of the run"},
		{"drain one stage", func(s *Synthetic) { s.Count, s.Stages, s.Drain = 0, []Stage{{Rate: 1, Duration: sim.Second}}, true }, "give two stages or more"},
		{"negative gap", func(s *Synthetic) {
			s.Count, s.Stages, s.Gap = 0, []Stage{{Rate: 1, Duration: sim.Second}, {Rate: 1, Duration: sim.Second}}, -1
		}, "gap between stages"},
		{"data with prompt", func(s *Synthetic) {
			s.Data = &SharedPrefixData{Groups: 1, PromptsPerGroup: 1, QuestionLen: 1, OutputLen: 1}
		}, "shared_prefix data sets the lengths"},
		{"nan rate", func(s *Synthetic) { s.Arrival.Rate = math.NaN() }, "arrival rate NaN"},
		{"process", func(s *Synthetic) { s.Arrival.Process = "bursty" }, `workload: arrival process "bursty"`},
		{"negative burstiness", func(s *Synthetic) { s.Arrival = Arrival{Process: ProcessGamma, Rate: 1, Burstiness: -1} }, "arrival burstiness -1"},
		{"poisson burstiness 2", func(s *Synthetic) { s.Arrival.Burstiness = 2 }, `use process "gamma"`},
		{"constant burstiness", func(s *Synthetic) { s.Arrival = Arrival{Process: ProcessConstant, Rate: 1, Burstiness: 1} }, "constant gaps have no burstiness"},
		{"no prompt", func(s *Synthetic) { s.Prompt = nil }, "prompt length distribution not set"},
		{"no output", func(s *Synthetic) { s.Output = nil }, "output length distribution not set"},
		{"no stop", func(s *Synthetic) { s.Count = 0 }, "set a count, a duration or both"},
		{"negative count", func(s *Synthetic) { s.Count = -1 }, "count -1: must be >= 0"},
		{"negative duration", func(s *Synthetic) { s.Duration = -1 }, "duration -0.000000001s: must be >= 0"},
		{"negative max", func(s *Synthetic) { s.MaxOutput = -1 }, "max output -1"},
	}
	for _, tt := range tests {
		s := ok
		tt.mod(&s)
		err := s.Validate()
		_, srcErr := s.Source()
		switch {
		case tt.want == "" && (err != nil || srcErr != nil):
			t.Errorf("%s: unexpected error %v / %v", tt.name, err, srcErr)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || srcErr == nil):
			t.Errorf("%s: error %v (Source: %v), want one containing %q", tt.name, err, srcErr, tt.want)
		}
	}
}

func TestOverflowEndsWithError(t *testing.T) {
	// 1e-9 req/s: mean gap 1e9 s; sim.Time holds 9.2e9 s, so a stream of
	// 1000 requests overflows after roughly 9 of them.
	src := mustSource(t, Synthetic{Arrival: Arrival{Process: ProcessConstant, Rate: 1e-9}, Prompt: Constant{1}, Output: Constant{1}, Count: 1000})
	var r Request
	n := 0
	for src.Next(&r) {
		n++
	}
	// Constant gaps of 1e9 s: arrivals at 1e9, ..., 9e9 s ≤ 9.22e9 s, the 10th overflows.
	if n != 9 || SourceErr(src) == nil || !strings.Contains(SourceErr(src).Error(), "overflows simulated time") {
		t.Errorf("got %d requests, err %v; want 9 and an overflow error", n, SourceErr(src))
	}
	// With a Duration set, running past sim.Time's range is a normal end.
	src = mustSource(t, Synthetic{Arrival: Arrival{Process: ProcessConstant, Rate: 1e-9}, Prompt: Constant{1}, Output: Constant{1}, Duration: sim.Forever})
	for src.Next(&r) {
	}
	if err := SourceErr(src); err != nil {
		t.Errorf("duration-bounded stream: %v", err)
	}
}

func BenchmarkSourceNext(b *testing.B) {
	for _, arr := range []Arrival{{Rate: 10}, {Process: ProcessGamma, Rate: 10, Burstiness: 0.5}} {
		b.Run(arr.String(), func(b *testing.B) {
			src, err := Synthetic{Arrival: arr, Prompt: LogNormal{6, 0.7}, Output: LogNormal{5.5, 0.8}, Count: math.MaxInt, Seed: 1}.Source()
			if err != nil {
				b.Fatal(err)
			}
			var r Request
			b.ReportAllocs()
			for b.Loop() {
				if !src.Next(&r) {
					b.Fatal("source ended")
				}
			}
		})
	}
}

// Shared prefixes: every prompt is the 1,000-token prefix plus its sampled
// part, the hashes are the prefix's 3 full 256-token blocks, equal within a
// group and different across groups, and arrivals are unchanged (the group
// draw has its own stream).
func TestSharedPrefix(t *testing.T) {
	base := Synthetic{Arrival: Arrival{Rate: 5}, Prompt: Constant{Value: 10}, Output: Constant{Value: 3}, Count: 200, Seed: 3}
	with := base
	with.SharedPrefix, with.PrefixGroups = 1000, 4
	a, _ := base.Source()
	b, _ := with.Source()
	var ra, rb Request
	groups := map[uint64]bool{}
	for a.Next(&ra) && b.Next(&rb) {
		if ra.Arrival != rb.Arrival || rb.PromptTokens != 1010 || len(rb.Prefix) != 3 || rb.PrefixBlockTokens != 256 {
			t.Fatalf("request %d: %+v vs %+v", ra.ID, ra, rb)
		}
		groups[rb.Prefix[0]] = true
	}
	if len(groups) != 4 {
		t.Fatalf("%d distinct prefixes, want 4", len(groups))
	}
}

// Multi-turn conversations: with one conversation of 3 turns in flight,
// requests come in turns of the same conversation; turn k's prompt is the
// history (earlier prompts and outputs) plus its new message, its hashes
// extend the previous turn's, and turn 1 of the next conversation starts
// afresh with new hashes. Arrivals are unchanged (own stream).
func TestConversations(t *testing.T) {
	base := Synthetic{Arrival: Arrival{Rate: 5}, Prompt: Constant{Value: 300}, Output: Constant{Value: 100}, Count: 7, Seed: 2}
	conv := base
	conv.Turns, conv.Conversations = 3, 1
	a, _ := base.Source()
	b, _ := conv.Source()
	var ra, rb Request
	var prev []uint64
	// Turn k (1-based) of a conversation: prompt 300 + (k−1)·(300+100).
	wantPrompt := []int{300, 700, 1100, 300, 700, 1100, 300}
	for i := 0; a.Next(&ra) && b.Next(&rb); i++ {
		if ra.Arrival != rb.Arrival {
			t.Fatalf("request %d: arrival changed", i)
		}
		if rb.PromptTokens != wantPrompt[i] {
			t.Fatalf("request %d: prompt %d, want %d", i, rb.PromptTokens, wantPrompt[i])
		}
		// Hashes cover the history's full 256-token blocks: (k−1)·400/256.
		if want := (wantPrompt[i] - 300) / 256; len(rb.Prefix) != want {
			t.Fatalf("request %d: %d prefix hashes, want %d", i, len(rb.Prefix), want)
		}
		if i%3 != 0 && !slices.Equal(rb.Prefix[:len(prev)], prev) {
			t.Fatalf("request %d: hashes do not extend the previous turn's", i)
		}
		if i%3 == 0 && i > 0 && len(prev) > 0 && len(rb.Prefix) > 0 && rb.Prefix[0] == prev[0] {
			t.Fatalf("request %d: a new conversation reuses the old one's hashes", i)
		}
		prev = slices.Clone(rb.Prefix)
	}
}
