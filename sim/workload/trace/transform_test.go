package trace

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// sliceSource yields a fixed list of requests, counting calls to Next.
type sliceSource struct {
	reqs   []workload.Request
	i      int
	calls  int
	closed bool
	err    error
}

func (s *sliceSource) Next(r *workload.Request) bool {
	s.calls++
	if s.i >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.i]
	s.i++
	return true
}

func (s *sliceSource) Err() error   { return s.err }
func (s *sliceSource) Close() error { s.closed = true; return nil }

// at builds requests arriving at the given seconds, with prompt 100+i and output 10.
func at(secs ...float64) *sliceSource {
	s := &sliceSource{}
	for i, v := range secs {
		s.reqs = append(s.reqs, workload.Request{ID: int64(i), Arrival: sim.FromSeconds(v), PromptTokens: 100 + i, OutputTokens: 10})
	}
	return s
}

func drainAll(t *testing.T, src workload.Source) []workload.Request {
	t.Helper()
	var out []workload.Request
	var r workload.Request
	for src.Next(&r) {
		if r.ID != int64(len(out)) {
			t.Fatalf("request %d has ID %d", len(out), r.ID)
		}
		out = append(out, r)
	}
	if err := workload.SourceErr(src); err != nil {
		t.Fatal(err)
	}
	return out
}

func arrivalsOf(reqs []workload.Request) []sim.Time {
	out := make([]sim.Time, len(reqs))
	for i, r := range reqs {
		out[i] = r.Arrival
	}
	return out
}

func secs(v ...float64) []sim.Time {
	out := make([]sim.Time, len(v))
	for i, x := range v {
		out[i] = sim.FromSeconds(x)
	}
	return out
}

func TestWindow(t *testing.T) {
	tests := []struct {
		start, end float64
		want       []sim.Time
		calls      int // Next calls on the inner source
	}{
		{2, 4, secs(0, 1), 5},             // keeps 2 and 3 s; reads 0..4 s, stops at 4 s
		{0, 0, secs(0, 1, 2, 3, 4, 5), 7}, // no window: everything, plus the final false
		{4.5, 0, secs(0.5), 7},            // from 4.5 s: 5 s → 0.5 s
		{0, 0.5, secs(0), 2},              // stops at the request at 1 s
		{6, 10, nil, 7},
	}
	for _, tt := range tests {
		src := at(0, 1, 2, 3, 4, 5)
		var end sim.Time
		if tt.end > 0 {
			end = sim.FromSeconds(tt.end)
		}
		got := arrivalsOf(drainAll(t, Window(src, sim.FromSeconds(tt.start), end)))
		if !slices.Equal(got, tt.want) || src.calls != tt.calls {
			t.Errorf("Window[%v, %v) = %v after %d reads, want %v after %d", tt.start, tt.end, got, src.calls, tt.want, tt.calls)
		}
	}
}

func TestLimit(t *testing.T) {
	src := at(0, 1, 2, 3)
	got := drainAll(t, Limit(src, 2))
	if len(got) != 2 || got[1].PromptTokens != 101 || src.calls != 2 {
		t.Errorf("Limit 2: %+v after %d reads", got, src.calls)
	}
	if got := drainAll(t, Limit(at(0, 1), 5)); len(got) != 2 {
		t.Errorf("Limit 5 of 2: %d requests", len(got))
	}
}

// TestSample: Bernoulli thinning with p = 0.3 of n = 100,000 requests keeps
// a Binomial(n, p) count: mean 30,000, σ = √(n·p·(1−p)) = √21,000 ≈ 144.9;
// allow 5σ ≈ 725. The same seed keeps the same requests.
func TestSample(t *testing.T) {
	const n, p = 100_000, 0.3
	times := make([]float64, n)
	for i := range times {
		times[i] = float64(i) / 10
	}
	run := func(seed uint64) []workload.Request {
		return drainAll(t, Sample(at(times...), p, rand.New(rand.NewPCG(seed, StreamSample))))
	}
	a, b, c := run(1), run(1), run(2)
	if d := math.Abs(float64(len(a)) - n*p); d > 725 {
		t.Errorf("kept %d of %d, expected %v ± 725", len(a), n, n*p)
	}
	if !slices.Equal(arrivalsOf(a), arrivalsOf(b)) {
		t.Error("same seed, different sample")
	}
	if slices.Equal(arrivalsOf(a), arrivalsOf(c)) {
		t.Error("different seeds, same sample")
	}
	if !slices.IsSorted(arrivalsOf(a)) {
		t.Error("sample out of order")
	}
}

// TestScale: factor 2.5 divides every arrival by 2.5, so gaps shrink by the
// same ratio and their coefficient of variation stays (up to the 1 ns rounding).
func TestScale(t *testing.T) {
	in := []float64{0, 0.1, 0.15, 2, 2.05, 7}
	got := arrivalsOf(drainAll(t, Scale(at(in...), 2.5)))
	want := secs(0, 0.04, 0.06, 0.8, 0.82, 2.8) // each /2.5
	if !slices.Equal(got, want) {
		t.Errorf("Scale 2.5: %v, want %v", got, want)
	}
	st1, _ := Characterize(at(in...))
	st2, _ := Characterize(Scale(at(in...), 2.5))
	if math.Abs(st2.MeanRate-2.5*st1.MeanRate) > 1e-9*st2.MeanRate || math.Abs(st2.GapCV-st1.GapCV) > 1e-9 {
		t.Errorf("rate %v → %v (want ×2.5), CV %v → %v (want equal)", st1.MeanRate, st2.MeanRate, st1.GapCV, st2.GapCV)
	}
	// Stretching past sim.Time's range is an error, not a wrap.
	src := Scale(at(0, 9e9), 1e-3)
	drained := 0
	var r workload.Request
	for src.Next(&r) {
		drained++
	}
	if drained != 1 || src.Err() == nil || !strings.Contains(src.Err().Error(), "past what simulated time holds") {
		t.Errorf("overflowing scale: %d requests, %v", drained, src.Err())
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in, out, max      int
		wantIn, wantOut   int
		prefix, wantBlock int // prefix blocks given (16 tokens each), kept
	}{
		{100, 10, 2048, 100, 10, 7, 7},     // fits
		{2000, 100, 2048, 2000, 48, 0, 0},  // output cut: 2048 − 2000
		{2048, 5, 2048, 2047, 1, 0, 0},     // prompt alone fills the context: 2047 + 1
		{5000, 5, 2048, 2047, 1, 313, 128}, // 2047 tokens hold ⌈2047/16⌉ = 128 blocks of 16
		{2047, 1, 2048, 2047, 1, 0, 0},     // exactly full
		{1, 1, 2, 1, 1, 1, 1},
	}
	for _, tt := range tests {
		r := workload.Request{PromptTokens: tt.in, OutputTokens: tt.out}
		if tt.prefix > 0 {
			r.Prefix, r.PrefixBlockTokens = make([]uint64, tt.prefix), 16
		}
		c := Clip(&sliceSource{reqs: []workload.Request{r}}, tt.max)
		got := drainAll(t, c)[0]
		if got.PromptTokens != tt.wantIn || got.OutputTokens != tt.wantOut || len(got.Prefix) != tt.wantBlock {
			t.Errorf("Clip(%d+%d, %d) = %d+%d with %d blocks, want %d+%d with %d", tt.in, tt.out, tt.max,
				got.PromptTokens, got.OutputTokens, len(got.Prefix), tt.wantIn, tt.wantOut, tt.wantBlock)
		}
		wantClipped := int64(0)
		if tt.in+tt.out > tt.max {
			wantClipped = 1
		}
		if c.Clipped() != wantClipped {
			t.Errorf("Clip(%d+%d, %d): Clipped() = %d, want %d", tt.in, tt.out, tt.max, c.Clipped(), wantClipped)
		}
	}
}

func TestRepeat(t *testing.T) {
	var opened []*sliceSource
	open := func(secs ...float64) func() (workload.Source, error) {
		return func() (workload.Source, error) {
			s := at(secs...)
			opened = append(opened, s)
			return s, nil
		}
	}
	tests := []struct {
		secs   []float64
		n      int
		period float64
		want   []sim.Time
	}{
		// Automatic period: last + (last − first)/(m − 1) = 3 + 3/2 = 4.5 s.
		{[]float64{0, 1, 3}, 3, 0, secs(0, 1, 3, 4.5, 5.5, 7.5, 9, 10, 12)},
		{[]float64{0, 1, 3}, 2, 10, secs(0, 1, 3, 10, 11, 13)},
		{[]float64{2}, 3, 0, secs(2, 5, 8)}, // one request: period = last + 1 s = 3 s
		{[]float64{0, 1, 3}, 1, 0, secs(0, 1, 3)},
		{nil, 3, 0, nil},
	}
	for _, tt := range tests {
		opened = nil
		got := arrivalsOf(drainAll(t, Repeat(open(tt.secs...), tt.n, sim.FromSeconds(tt.period))))
		if !slices.Equal(got, tt.want) {
			t.Errorf("Repeat(%v, %d, %v) = %v, want %v", tt.secs, tt.n, tt.period, got, tt.want)
		}
		wantOpens := tt.n
		if len(tt.secs) == 0 {
			wantOpens = 1 // an empty first copy ends the replay
		}
		if len(opened) != wantOpens {
			t.Errorf("Repeat(%v, %d): opened %d times, want %d", tt.secs, tt.n, len(opened), wantOpens)
		}
		for i, s := range opened {
			if !s.closed {
				t.Errorf("Repeat(%v, %d): copy %d not closed", tt.secs, tt.n, i)
			}
		}
	}
	// Errors from open and from a copy end the stream and surface in Err.
	boom := errors.New("boom")
	rep := Repeat(func() (workload.Source, error) { return nil, boom }, 2, 0)
	if drainN(rep) != 0 || !errors.Is(rep.Err(), boom) {
		t.Errorf("failing open: %v", rep.Err())
	}
	rep = Repeat(func() (workload.Source, error) { s := at(0, 1); s.err = boom; return s, nil }, 2, 0)
	if drainN(rep) != 2 || !errors.Is(rep.Err(), boom) {
		t.Errorf("failing copy: %v", rep.Err())
	}
}

func drainN(src workload.Source) int {
	n := 0
	var r workload.Request
	for src.Next(&r) {
		n++
	}
	return n
}

// TestArrivals: a length-only trace given Poisson arrivals gets exactly the
// arrival times of a Synthetic workload with the same process and seed, and
// keeps its own lengths.
func TestArrivals(t *testing.T) {
	a := workload.Arrival{Process: workload.ProcessGamma, Rate: 4, Burstiness: 0.5}
	lengths := &sliceSource{}
	for i := 0; i < 50; i++ {
		lengths.reqs = append(lengths.reqs, workload.Request{PromptTokens: 10 + i, OutputTokens: 5})
	}
	src, err := Arrivals(lengths, a, 7)
	if err != nil {
		t.Fatal(err)
	}
	got := drainAll(t, src)
	syn, _ := workload.Synthetic{Arrival: a, Prompt: workload.Constant{Value: 1}, Output: workload.Constant{Value: 1}, Count: 50, Seed: 7}.Source()
	want := drainAll(t, syn)
	if !slices.Equal(arrivalsOf(got), arrivalsOf(want)) {
		t.Errorf("arrivals differ from Synthetic's with the same seed")
	}
	if got[49].PromptTokens != 59 {
		t.Errorf("lengths not kept: %+v", got[49])
	}
	if _, err := Arrivals(lengths, workload.Arrival{Rate: -1}, 1); err == nil {
		t.Error("bad arrival process accepted")
	}
}

// TestPipelineNoAlloc: a reader under every streaming transformation
// allocates nothing per request.
func TestPipelineNoAlloc(t *testing.T) {
	data := genTrace(Mooncake, 5000)
	rd, err := NewReader(strings.NewReader(string(data)), "gen", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var src workload.Source = Window(rd, sim.Second, 0)
	src = Sample(src, 0.9, rand.New(rand.NewPCG(1, 2)))
	src = Limit(src, 4000)
	src = Scale(src, 3)
	src = Clip(src, 2048)
	var r workload.Request
	for i := 0; i < 10; i++ {
		src.Next(&r)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if !src.Next(&r) {
			t.Fatal("ended early")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}
