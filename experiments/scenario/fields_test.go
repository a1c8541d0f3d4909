package scenario

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim"
)

// keyLines finds each assigned key's line: plain, dotted and quoted keys,
// [tables], the i-th [[array]] table's keys, and lines inside multi-line
// arrays and strings are skipped (they assign nothing).
func TestKeyLines(t *testing.T) {
	doc := `name = "x"                      # 1
batch.max_num_seqs = 4              # 2
[workload]                          # 3
"rate" = 5                          # 4
prompt = """
not = a key
"""                                 # 7
[[workload.classes]]                # 8
name = "a"                          # 9
[[workload.classes]]                # 10
ttft_ms = 1                         # 11
[disagg]                            # 12
decode_batch = {block_size = 0}     # 13
values = [
  [1, 2],
  3,
]                                   # 17
link = "ib"                         # 18
`
	got := keyLines([]byte(doc))
	for key, line := range map[string]int{
		"name": 1, "batch.max_num_seqs": 2, "workload": 3, "workload.rate": 4, "workload.prompt": 5,
		"workload.classes[0]": 8, "workload.classes[0].name": 9, "workload.classes[1]": 10,
		"workload.classes[1].ttft_ms": 11, "disagg.decode_batch": 13, "disagg.values": 14, "disagg.link": 18,
	} {
		if got[key] != line {
			t.Errorf("line of %q = %d, want %d", key, got[key], line)
		}
	}
	for _, key := range []string{"workload.not", "not", "disagg.3"} {
		if _, ok := got[key]; ok {
			t.Errorf("%q listed as a key (inside a multi-line value)", key)
		}
	}
}

// A zero written explicitly means zero where zero is a legal value, and
// the default only when the field is omitted.
func TestExplicitZeroIsZero(t *testing.T) {
	const base = "model = \"llama-3.1-8b\"\ngpu = \"h100\"\n[workload]\nrate = 5\nrequests = 10\nprompt = \"constant:100\"\noutput = \"constant:10\"\n"
	resolve := func(extra string) *Plan {
		t.Helper()
		s, err := Parse(strings.NewReader(base+extra), "s.toml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A decode step of one request priced with and without the overhead:
	// they differ by the built-in H100 profile's fitted overhead (> 0).
	b := models.Batch{Decodes: 1, DecodeCtx: 100}
	withOverhead, _, _ := resolve("").Step.Step(b)
	noOverhead, _, _ := resolve("[hardware]\niteration_overhead_ms = 0\n").Step.Step(b)
	if !(withOverhead-noOverhead > 1e-4) {
		t.Errorf("iteration_overhead_ms = 0: step %g s, omitted: %g s; want the omitted one longer by the profile's overhead", noOverhead, withOverhead)
	}
	// swap_space_gb: omitted is vLLM's 4 GiB = 4 × 1.073741824e9 B; 0 is none.
	if got := resolve("").Serve.Instance.SwapSpace; got != 4*1.073741824e9 {
		t.Errorf("swap space omitted = %g B, want 4 GiB", got)
	}
	if got := resolve("[batch]\nswap_space_gb = 0\n").Serve.Instance.SwapSpace; got != 0 {
		t.Errorf("swap_space_gb = 0: swap space %g B, want 0", got)
	}
	// link_latency_us: omitted is the ib preset's 10 µs; 0 is an instant link.
	const disagg = "[disagg]\ndecode_replicas = 1\n"
	if got := resolve(disagg).Serve.Disagg.Link.Latency; got != 10*sim.Microsecond {
		t.Errorf("link latency omitted = %v, want the ib preset's 10 µs", got)
	}
	if got := resolve(disagg + "link_latency_us = 0\n").Serve.Disagg.Link.Latency; got != 0 {
		t.Errorf("link_latency_us = 0: latency %v, want 0", got)
	}
}

// Field durations: at most MaxDurationS; beyond it, and for ±Inf, the
// error says out of range; NaN and negatives are not durations.
func TestDurationRange(t *testing.T) {
	cases := []struct {
		ms   float64
		want string // "" = accepted
	}{
		{0, ""},
		{500, ""},
		{1e9, ""}, // 1e9 ms = 1e6 s = MaxDurationS exactly
		{1.0000001e9, "out of range (at most 1e+09 ms, 1e+06 s)"},
		{1e13, "1e+13 ms is out of range"},
		{math.Inf(1), "+Inf ms is out of range"},
		{math.NaN(), "NaN ms is not a number of milliseconds ≥ 0"},
		{-1, "-1 ms is not a number of milliseconds ≥ 0"},
		{math.Inf(-1), "-Inf ms is not a number of milliseconds ≥ 0"},
	}
	var s Scenario
	for _, c := range cases {
		d, err := s.duration("slo.ttft_ms", "slo-ttft", c.ms, 1e-3, "ms")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%g ms: %v", c.ms, err)
		case c.want == "" && d != sim.FromSeconds(c.ms/1e3):
			t.Errorf("%g ms = %v", c.ms, d)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%g ms: err %v, want one with %q", c.ms, err, c.want)
		}
	}
}
