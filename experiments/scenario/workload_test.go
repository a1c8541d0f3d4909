package scenario

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload"
)

// recorder keeps every request record.
type recorder struct{ recs []metrics.Record }

func (r *recorder) Record(m *metrics.Record) error { r.recs = append(r.recs, *m); return nil }
func (r *recorder) Step(*metrics.Step) error       { return nil }

// runRecords resolves s, runs it and returns its request records by ID and
// the source it ran.
func runRecords(t *testing.T, s Scenario) ([]metrics.Record, workload.Source, serve.Result) {
	t.Helper()
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	src, closeSrc, err := p.Source()
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc()
	rec := &recorder{}
	cfg := p.Serve
	cfg.Source, cfg.Collector, cfg.Sink = src, metrics.NewCollector(p.SLO), rec
	res, err := serve.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rec.recs, func(a, b metrics.Record) int { return int(a.ID - b.ID) })
	return rec.recs, src, res
}

// maxInflight sweeps [arrival, finish) intervals; a finish frees its slot
// before an arrival at the same time (the send that it lets through).
func maxInflight(recs []metrics.Record) int {
	type ev struct {
		at sim.Time
		d  int
	}
	var evs []ev
	for _, r := range recs {
		evs = append(evs, ev{r.Arrival, 1}, ev{r.Finish, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.d - b.d
	})
	n, m := 0, 0
	for _, e := range evs {
		n += e.d
		m = max(m, n)
	}
	return m
}

// Closed-loop and max-concurrency runs never have more than N requests in
// flight, and a saturating load reaches N.
func TestMaxConcurrencyInvariant(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rate  float64
		n     int
		think float64
	}{
		{"closed loop (rate inf)", math.Inf(1), 8, 0},
		{"closed loop with think time", math.Inf(1), 8, 0.5},
		{"open loop at 40 req/s, 16 slots", 40, 16, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := Default()
			s.Workload.Rate, s.Workload.Requests = tt.rate, 400
			n := tt.n
			s.Workload.MaxConcurrency, s.Workload.ThinkTimeS = &n, tt.think
			recs, src, res := runRecords(t, s)
			if res.Finished != 400 {
				t.Fatalf("%d finished, want 400", res.Finished)
			}
			m := maxInflight(recs)
			if m > tt.n || src.(*workload.Limited).MaxInflight() > tt.n {
				t.Fatalf("%d in flight at once (client counts %d), limit %d", m, src.(*workload.Limited).MaxInflight(), tt.n)
			}
			if m < tt.n {
				t.Errorf("at most %d in flight: this load should fill all %d slots", m, tt.n)
			}
		})
	}
}

// Rate inf puts every request at t = 0.
func TestRateInfAllAtZero(t *testing.T) {
	s := Default()
	s.Workload.Rate, s.Workload.Requests = math.Inf(1), 50
	recs, _, _ := runRecords(t, s)
	for _, r := range recs {
		if r.Arrival != 0 {
			t.Fatalf("request %d arrives at %v, want 0", r.ID, r.Arrival)
		}
	}
	if len(recs) != 50 {
		t.Fatalf("%d records, want 50", len(recs))
	}
	// summary.json holds rate inf as "inf", and reads back.
	js, err := json.Marshal(s.Workload)
	if err != nil || !strings.Contains(string(js), `"rate":"inf"`) {
		t.Fatalf("JSON %s, %v: want rate \"inf\"", js, err)
	}
	var back Workload
	if err := json.Unmarshal(js, &back); err != nil || !math.IsInf(back.Rate, 1) {
		t.Fatalf("read back rate %v, %v", back.Rate, err)
	}
}

// With drain, the second stage starts only after the first stage's last
// request finishes (plus gap_s); the request counts are the rescaled
// int(rate × duration).
func TestStagesDrainInEngine(t *testing.T) {
	s := Default()
	s.Workload.Rate, s.Workload.Requests = 0, 0
	s.Workload.Stages = []Stage{{Rate: 8, DurationS: 10}, {Rate: 20, DurationS: 5}}
	s.Workload.Drain, s.Workload.GapS, s.Workload.Rescale = true, 2, true
	recs, _, _ := runRecords(t, s)
	if len(recs) != 180 { // int(8 × 10) + int(20 × 5) = 80 + 100
		t.Fatalf("%d requests, want 80 + 100 = 180", len(recs))
	}
	var last sim.Time
	for _, r := range recs[:80] {
		last = max(last, r.Finish)
	}
	start := max(last, 10*sim.Second) + 2*sim.Second // drained, then the 2 s gap
	if recs[79].Arrival != 10*sim.Second || recs[80].Arrival <= start || recs[179].Arrival != start+5*sim.Second {
		t.Errorf("stage 0 ends at %v (want 10 s); stage 1 runs %v … %v, want (%v, %v]", recs[79].Arrival, recs[80].Arrival, recs[179].Arrival, start, start+5*sim.Second)
	}
}

// The shared_prefix generator with prefix caching: every prompt comes back
// every G × U = 100 requests, and the cache then hits its full blocks.
func TestSharedPrefixHitsCache(t *testing.T) {
	s := Default()
	s.Workload.Prompt, s.Workload.Output = "", ""
	s.Workload.Rate, s.Workload.Requests, s.Workload.Rescale = 8, 1000, true
	s.Workload.SharedPrefixData = &workload.SharedPrefixData{Groups: 10, PromptsPerGroup: 10, SystemPromptLen: 500, QuestionLen: 66, OutputLen: 248}
	s.Batch.PrefixCaching = true
	p, rep := resolveRun(t, s)
	// Each prompt is 500 + 66 = 566 tokens: 35 full blocks of 16 (560
	// tokens), 31 of them (496 tokens) inside the system prompt. The first
	// cycle hits the system prompt for 9 of each group's 10 prompts:
	// 10 × 9 × 496 = 44,640 tokens; the nine later cycles hit 560 tokens
	// each: 900 × 560 = 504,000. Of 1000 × 566 = 566,000 prompt tokens,
	// that is 548,640 / 566,000 = 0.9693 at most.
	hit := rep.Counts().PrefixHitRate
	t.Logf("hit rate %.4f, preemptions %d", hit, rep.Result.Preemptions)
	if hit > 548640.0/566000+1e-9 || hit < 0.96 {
		t.Fatalf("prefix hit rate %.4f, want ≤ 0.9693 and ≥ 0.96", hit)
	}
	hdr := header(t, p)
	if !strings.Contains(hdr, "shared_prefix prompts: 10 groups × 10, system prompt 500 + question 66 tokens, cycled every 100 requests, output 248") {
		t.Errorf("header does not describe the generator:\n%s", hdr)
	}
}

// The header line describes each shape.
func TestDescribeShapes(t *testing.T) {
	four := 4
	tests := []struct {
		name string
		edit func(w *Workload)
		want string
	}{
		{"default", func(w *Workload) {}, "Workload: 1000 requests, poisson arrivals at 10 req/s, prompt lognormal:6.5,0.8"},
		{"duration", func(w *Workload) { w.Requests, w.DurationS = 0, 30 }, "Workload: 30 s of requests, poisson arrivals at 10 req/s"},
		{"rescaled duration", func(w *Workload) { w.Requests, w.DurationS, w.Rescale = 0, 30, true }, "30 s of requests, poisson arrivals at 10 req/s rescaled to fill it (300 requests)"},
		{"constant", func(w *Workload) { w.Arrival = "constant" }, "1000 requests, constant arrivals at 10 req/s"},
		{"offline", func(w *Workload) { w.Rate = math.Inf(1) }, "1000 requests, all at t = 0 (rate inf)"},
		{"closed loop", func(w *Workload) { w.Rate, w.MaxConcurrency, w.ThinkTimeS = math.Inf(1), &four, 1.5 }, "all at t = 0 (rate inf), at most 4 in flight (vLLM --max-concurrency: requests wait at the client, TTFT counts from the send) with 1.5 s think time"},
		{"stages", func(w *Workload) {
			w.Rate, w.Requests, w.Stages, w.Drain, w.Rescale = 0, 0, []Stage{{8, 600}, {20, 600}}, true, true
		}, "2 stages (8 req/s × 600 s, 20 req/s × 600 s; each drained before the next) of poisson arrivals rescaled to fill each stage (int(rate × duration) requests)"},
	}
	for _, tt := range tests {
		s := Default()
		tt.edit(&s.Workload)
		p, err := s.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		hdr := header(t, p)
		if !strings.Contains(hdr, tt.want) {
			t.Errorf("%s: header\n%s\nwant it to contain %q", tt.name, hdr, tt.want)
		}
	}
}

// Bad workload shapes name the field and say what is wrong.
func TestBadWorkloadShapes(t *testing.T) {
	zero, one := 0, 1
	tests := []struct {
		name string
		edit func(w *Workload)
		want []string
	}{
		{"requests and duration", func(w *Workload) { w.DurationS = 10 }, []string{`"workload.duration_s"`, "give requests or duration_s, not both"}},
		{"stage rate 0", func(w *Workload) { w.Rate, w.Requests, w.Stages = 0, 0, []Stage{{0, 10}} }, []string{`"workload.stages[0].rate"`, "0 requests/s"}},
		{"stage negative duration", func(w *Workload) { w.Rate, w.Requests, w.Stages = 0, 0, []Stage{{5, 10}, {5, -1}} }, []string{`"workload.stages[1].duration_s"`, "-1"}},
		{"stages with rate", func(w *Workload) { w.Requests, w.Stages = 0, []Stage{{5, 10}} }, []string{`"workload.stages"`, "leave rate, requests and duration_s unset"}},
		{"drain one stage", func(w *Workload) { w.Rate, w.Requests, w.Stages, w.Drain = 0, 0, []Stage{{5, 10}}, true }, []string{`"workload.drain"`, "two [[workload.stages]]"}},
		{"negative gap", func(w *Workload) { w.Rate, w.Requests, w.Stages, w.GapS = 0, 0, []Stage{{5, 10}, {5, 10}}, -2 }, []string{`"workload.gap_s"`, "-2"}},
		{"max_concurrency 0", func(w *Workload) { w.MaxConcurrency = &zero }, []string{`"workload.max_concurrency"`, "0 must be ≥ 1"}},
		{"think without slots", func(w *Workload) { w.ThinkTimeS = 1 }, []string{`"workload.think_time_s"`, "set max_concurrency"}},
		{"negative think", func(w *Workload) { w.MaxConcurrency, w.ThinkTimeS = &one, -1 }, []string{`"workload.think_time_s"`, "-1"}},
		{"rate inf constant", func(w *Workload) { w.Rate, w.Arrival = math.Inf(1), "constant" }, []string{`"workload.arrival"`, "rate inf sends every request at time 0"}},
		{"rate inf duration", func(w *Workload) { w.Rate, w.Requests, w.DurationS = math.Inf(1), 0, 10 }, []string{`"workload.rate"`, "give a number of requests, not a duration"}},
		{"rate inf rescale", func(w *Workload) { w.Rate, w.Rescale = math.Inf(1), true }, []string{`"workload.rescale"`, "no gaps to rescale"}},
		{"constant burstiness", func(w *Workload) { w.Arrival, w.Burstiness = "constant", 2 }, []string{`"workload.arrival"`, "constant gaps have no burstiness"}},
		{"shared_prefix with prompt", func(w *Workload) {
			w.SharedPrefixData = &workload.SharedPrefixData{Groups: 1, PromptsPerGroup: 1, QuestionLen: 5, OutputLen: 5}
		}, []string{`"workload.shared_prefix"`, "leave prompt, output"}},
		{"shared_prefix no groups", func(w *Workload) {
			w.Prompt, w.Output, w.SharedPrefixData = "", "", &workload.SharedPrefixData{QuestionLen: 5, OutputLen: 5}
		}, []string{`"workload.shared_prefix"`, "num_groups 0"}},
		{"stages with classes", func(w *Workload) {
			w.Rate, w.Requests, w.Stages, w.Classes = 0, 0, []Stage{{5, 10}}, []Class{{Name: "a", Weight: 1, Prompt: "100", Output: "10"}}
		}, []string{`"workload.stages"`, "not to a class mix"}},
	}
	for _, tt := range tests {
		s := Default()
		tt.edit(&s.Workload)
		_, err := s.Resolve()
		errHas(t, tt.name, err, tt.want)
	}
}

// The new fields survive the TOML round trip that sweeps apply to a base
// scenario (and rate inf is TOML's inf).
func TestShapeTOMLRoundTrip(t *testing.T) {
	in := "model = \"llama-3.1-8b\"\n[workload]\nrate = inf\nrequests = 5\nmax_concurrency = 3\nthink_time_s = 0.5\n" +
		"[workload.shared_prefix]\nnum_groups = 2\nnum_prompts_per_group = 3\nsystem_prompt_len = 10\nquestion_len = 4\noutput_len = 2\n"
	s, err := Parse(strings.NewReader(in), "in.toml")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(strings.NewReader(buf.String()), "out.toml")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	w := back.Workload
	if !math.IsInf(w.Rate, 1) || w.MaxConcurrency == nil || *w.MaxConcurrency != 3 || w.ThinkTimeS != 0.5 || w.SharedPrefixData == nil || w.SharedPrefixData.Groups != 2 {
		t.Fatalf("round trip lost fields: %+v", w)
	}
	st := "model = \"llama-3.1-8b\"\n[workload]\ndrain = true\n[[workload.stages]]\nrate = 2.0\nduration_s = 5.0\n[[workload.stages]]\nrate = 4.0\nduration_s = 5.0\n"
	s, err = Parse(strings.NewReader(st), "st.toml")
	if err != nil || len(s.Workload.Stages) != 2 || s.Workload.Stages[1].Rate != 4 || !s.Workload.Drain {
		t.Fatalf("stages: %+v, %v", s.Workload, err)
	}
}
