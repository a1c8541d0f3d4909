package sweep

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/hardware/calibrate"
)

func writeSweep(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sweep.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runSweepText loads the sweep file text, expands its points and runs
// them on two workers, failing the test on any error.
func runSweepText(t *testing.T, text string) []PointResult {
	t.Helper()
	_, pts := loadPoints(t, text)
	res, err := RunSweep(pts, 2)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// loadPoints loads the sweep file text and expands its points, failing
// the test on any error.
func loadPoints(t *testing.T, text string) (*Sweep, []Point) {
	t.Helper()
	sw, err := LoadSweep(writeSweep(t, text))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sw.Points()
	if err != nil {
		t.Fatal(err)
	}
	return sw, pts
}

// checkSweepErrs loads and expands each case's sweep file text and wants
// an error containing its want; cite, when not nil, checks that error
// further.
func checkSweepErrs(t *testing.T, cases []sweepErrCase, cite func(t *testing.T, c sweepErrCase, err error)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sw, err := LoadSweep(writeSweep(t, c.text))
			if err == nil {
				_, err = sw.Points()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if cite != nil {
				cite(t, c, err)
			}
		})
	}
}

type sweepErrCase struct{ name, text, want string }

// csvOf is results.csv's text for the point files.
func csvOf(t *testing.T, axes []Axis, pfs []PointFile) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCSV(&b, axes, pfs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// defaultTOMLLacks reports each line of the default scenario's TOML form
// that starts with one of the keys: keys a change added must stay out of
// it, so sweep point keys (a hash of that form) do not move.
func defaultTOMLLacks(t *testing.T, keys ...string) {
	t.Helper()
	var buf strings.Builder
	if err := toml.NewEncoder(&buf).Encode(scenario.Default()); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		k := strings.TrimSpace(l)
		for _, key := range keys {
			if strings.HasPrefix(k, key) {
				t.Errorf("the default scenario's TOML form has %q", k)
			}
		}
	}
}

const smallSweep = `
name = "small"
seeds = [1, 2]
[base]
model = "llama-3.1-8b"
gpu = "h100"
[base.workload]
requests = 150
prompt = "lognormal:6.5,0.8"
output = "lognormal:5,0.6"
[[axis]]
field = "batch"
values = [{policy = "chunked", max_num_batched_tokens = 512}, {policy = "prefill-first"}]
[[axis]]
field = "workload.rate"
values = [3, 9.5]
`

// Results do not depend on the number of workers.
func TestSweepWorkersIdentical(t *testing.T) {
	sw, pts := loadPoints(t, smallSweep)
	if len(pts) != 8 { // 2 batch values × 2 rates × 2 seeds
		t.Fatalf("%d points, want 8", len(pts))
	}
	var out [2]string
	for i, workers := range []int{1, 8} {
		res, err := RunSweep(pts, workers)
		if err != nil {
			t.Fatal(err)
		}
		var pfs []PointFile
		for _, r := range res {
			pfs = append(pfs, PointFileOf(r))
		}
		out[i] = csvOf(t, sw.Axes, pfs)
	}
	if out[0] != out[1] {
		t.Fatal("1 and 8 workers give different results")
	}
	if !strings.Contains(out[0], `"max_num_batched_tokens=512 policy=chunked"`) && !strings.Contains(out[0], "max_num_batched_tokens=512 policy=chunked,") {
		t.Fatalf("CSV lacks the table-valued axis:\n%s", out[0])
	}
}

func TestSweepErrors(t *testing.T) {
	checkSweepErrs(t, []sweepErrCase{
		{"unknown field", strings.Replace(smallSweep, `field = "workload.rate"`, `field = "workload.rat"`, 1), "workload.rat"},
		{"empty axis", smallSweep + "[[axis]]\nfield = \"tp\"\nvalues = []\n", `axis "tp" has no values`},
		{"bad value", strings.Replace(smallSweep, "values = [3, 9.5]", "values = [3, -1]", 1), "workload.rate=-1"},
		{"duplicate axis", smallSweep + "[[axis]]\nfield = \"workload.rate\"\nvalues = [1]\n", "two axes"},
		{"unknown top-level", smallSweep + "bogus = 1\n", "bogus"},
		{"conflicting settings", smallSweep + "[[axis]]\nfield = \"batch.policy\"\nvalues = [\"static\"]\n", "conflicting settings"},
		{"bad policy in a table", strings.Replace(smallSweep, `{policy = "prefill-first"}`, `{policy = "magic"}`, 1), "magic"},
	}, nil)
}

// TestBatchingDirections runs experiments/batching.toml with fewer requests
// and checks the published directions it is meant to show:
//   - Orca (OSDI'22): iteration-level (continuous) batching serves far more
//     than static batching: at the overload rate, where the completed rate
//     is the capacity, continuous batching completes at least 1.3× as many
//     requests per second, and at the busy rate its median TTFT is at least
//     10× lower.
//   - Sarathi-Serve (OSDI'24): chunked prefill cuts the tail time between
//     tokens: at the overload rate, p99 ITL with 512-token chunks is less
//     than half of prefill-prioritized continuous batching's.
func TestBatchingDirections(t *testing.T) {
	sw, err := LoadSweep("../batching.toml")
	if err != nil {
		t.Fatal(err)
	}
	sw.Base.Workload.Requests = 600
	pts, err := sw.Points()
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunSweep(pts, 0)
	if err != nil {
		t.Fatal(err)
	}
	get := func(policy string, budget int64, rate float64) *scenario.Report {
		for _, r := range res {
			m := r.Point.Values[0].(map[string]any)
			b, _ := m["max_num_batched_tokens"].(int64)
			if m["policy"] == policy && (budget == 0 || b == budget) && r.Point.Values[1] == rate {
				return r.Report
			}
		}
		t.Fatalf("no point %s/%d/%g", policy, budget, rate)
		return nil
	}
	static, cont := get("static", 0, 12), get("prefill-first", 0, 12)
	if cont.Summary.RequestThroughput < 1.3*static.Summary.RequestThroughput {
		t.Errorf("capacity: continuous %.2f req/s vs static %.2f: want ≥ 1.3×", cont.Summary.RequestThroughput, static.Summary.RequestThroughput)
	}
	if s, c := get("static", 0, 5).Summary.TTFT.Median, get("prefill-first", 0, 5).Summary.TTFT.Median; c*10 > s {
		t.Errorf("median TTFT at 5 req/s: continuous %.0f ms vs static %.0f ms: want ≥ 10× lower", c, s)
	}
	if ch, pf := get("chunked", 512, 12).Summary.ITL.P99, cont.Summary.ITL.P99; ch*2 > pf {
		t.Errorf("p99 ITL at overload: chunked-512 %.1f ms vs prefill-first %.1f ms: want < half", ch, pf)
	}
}

// A sweep stopped midway (here: two of its point files deleted) and run
// again computes only the missing points, and its results equal a full run.
func TestSweepResume(t *testing.T) {
	sw, pts := loadPoints(t, smallSweep)
	dir := t.TempDir()
	ran, found, err := RunSweepDir(pts, dir, DirOptions{Workers: 2})
	if err != nil || ran != 8 || found != 0 {
		t.Fatalf("first run: ran %d found %d err %v; want 8, 0", ran, found, err)
	}
	full, err := Collect(pts, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{2, 5} {
		if err := os.Remove(filepath.Join(dir, "points", pts[i].Key()+".json")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Collect(pts, dir); err == nil || !strings.Contains(err.Error(), "2 of 8 points") {
		t.Fatalf("collect with two points missing: %v", err)
	}
	ran, found, err = RunSweepDir(pts, dir, DirOptions{Workers: 2})
	if err != nil || ran != 2 || found != 6 {
		t.Fatalf("rerun: ran %d found %d err %v; want 2, 6", ran, found, err)
	}
	again, err := Collect(pts, dir)
	if err != nil {
		t.Fatal(err)
	}
	if csvOf(t, sw.Axes, full) != csvOf(t, sw.Axes, again) {
		t.Fatal("resumed results differ from the full run")
	}
}

// RunSweepDirResults returns what Collect reads back from the directory
// afterwards, field for field and in the same order: on a fresh run (every
// point decoded from the bytes written), on a resumed one (the found points
// as read, the rest run), and on a shard. A file under a point's name that
// holds another point's key is not taken for that point: it runs again and
// its file is replaced.
func TestRunSweepDirResultsIsCollect(t *testing.T) {
	sw, pts := loadPoints(t, smallSweep)
	dir := t.TempDir()
	check := func(what string, o DirOptions, wantRan, wantFound int) {
		t.Helper()
		pfs, ran, found, err := RunSweepDirResults(pts, dir, o)
		if err != nil || ran != wantRan || found != wantFound {
			t.Fatalf("%s: ran %d found %d err %v; want %d, %d", what, ran, found, err, wantRan, wantFound)
		}
		var mine []Point
		for _, p := range pts {
			if o.Of <= 1 || p.Index%o.Of == o.Shard {
				mine = append(mine, p)
			}
		}
		back, err := Collect(mine, dir)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !reflect.DeepEqual(pfs, back) {
			t.Fatalf("%s: in memory\n%+v\nread back\n%+v", what, pfs, back)
		}
		if len(mine) > 1 && csvOf(t, sw.Axes, pfs) != csvOf(t, sw.Axes, back) {
			t.Fatalf("%s: results.csv differs", what)
		}
	}
	check("shard 1/3", DirOptions{Workers: 2, Shard: 1, Of: 3}, 3, 0)
	check("the rest", DirOptions{Workers: 2}, 5, 3)
	if err := os.Remove(filepath.Join(dir, "points", pts[4].Key()+".json")); err != nil {
		t.Fatal(err)
	}
	// Point 6's file now holds point 0's result.
	data, err := os.ReadFile(filepath.Join(dir, "points", pts[0].Key()+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "points", pts[6].Key()+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	check("resumed", DirOptions{Workers: 1}, 2, 6)
}

// Shards run in separate directories merge into the full run's results.
func TestSweepShardsMerge(t *testing.T) {
	sw, pts := loadPoints(t, smallSweep)
	full := t.TempDir()
	if _, _, err := RunSweepDir(pts, full, DirOptions{}); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := range 3 {
		d := t.TempDir()
		if _, _, err := RunSweepDir(pts, d, DirOptions{Shard: i, Of: 3}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	if _, err := Collect(pts, dirs[0]); err == nil {
		t.Fatal("one shard alone collected as complete")
	}
	merged, err := Collect(pts, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Collect(pts, full)
	if csvOf(t, sw.Axes, want) != csvOf(t, sw.Axes, merged) {
		t.Fatal("merged shards differ from the full run")
	}
}

func FuzzParseSweep(f *testing.F) {
	f.Add(smallSweep)
	f.Add("[[axis]]\nfield = \".\"\nvalues = [1]\n")
	f.Add("[base]\nmodel = \"llama-3.1-8b\"\n[[axis]]\nfield = \"batch\"\nvalues = [{policy = \"static\"}]\nlabels = [\"a\", \"b\"]\n")
	f.Fuzz(func(t *testing.T, text string) {
		sw, err := ParseSweep([]byte(text), "fuzz.toml", "fuzz", "")
		if err != nil {
			return
		}
		n := 1
		for _, a := range sw.Axes {
			n *= max(1, len(a.Values))
		}
		if n > 20 || sw.Base.Workload.Requests > 200 || sw.Base.Workload.DurationS > 0 || len(sw.Seeds) > 2 {
			return // keep fuzzing fast: resolve small grids only
		}
		_, _ = sw.Points() // an error or points, never a panic
	})
}

// A sweep rerun into the same directory reuses a point only while what it
// read is unchanged: editing the kernel profile file or the replayed trace
// (same scenario text) runs the points again, and the results change.
func TestSweepRerunsOnChangedInputs(t *testing.T) {
	dir := t.TempDir()
	prof, ok := calibrate.Builtin("h100")
	if !ok {
		t.Fatal("no built-in h100 profile")
	}
	profPath := filepath.Join(dir, "h100.toml")
	if err := os.WriteFile(profPath, prof.WriteTOML(), 0o644); err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "trace.csv")
	var tr strings.Builder
	tr.WriteString("arrival_s,prompt_tokens,output_tokens\n")
	for i := range 60 {
		fmt.Fprintf(&tr, "%g,%d,%d\n", 0.2*float64(i), 200+37*(i%9), 20+11*(i%7))
	}
	if err := os.WriteFile(tracePath, []byte(tr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sweepPath := filepath.Join(dir, "sweep.toml")
	text := `name = "inputs"
[base]
model = "llama-3.1-8b"
gpu = "h100"
[base.hardware]
profile = "h100.toml"
[base.workload.trace]
file = "trace.csv"
[[axis]]
field = "batch.max_num_seqs"
values = [8, 64]
`
	if err := os.WriteFile(sweepPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	run := func(wantRan, wantFound int) []PointFile {
		t.Helper()
		sw, err := LoadSweep(sweepPath)
		if err != nil {
			t.Fatal(err)
		}
		pts, err := sw.Points()
		if err != nil {
			t.Fatal(err)
		}
		ran, found, err := RunSweepDir(pts, out, DirOptions{})
		if err != nil || ran != wantRan || found != wantFound {
			t.Fatalf("ran %d, found %d, err %v; want %d, %d", ran, found, err, wantRan, wantFound)
		}
		res, err := Collect(pts, out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := run(2, 0)
	run(0, 2) // nothing changed: reused
	// A slower iteration overhead in the profile file: 30 × the built-in
	// h100's 0.81 ms = 24 ms, longer than this light load's steps (about
	// 6.7 ms of kernels, TPOT's mean), so vllm-v1's CPU/GPU overlap cannot
	// hide it (3×, 2.4 ms, is hidden entirely and moves the run by chance).
	// (The comment changes the size too: digests are cached per process by
	// path, size and modification time, and a file system may keep coarse
	// times.)
	prof.Iteration.OverheadS *= 30
	if err := os.WriteFile(profPath, append(prof.WriteTOML(), "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	second := run(2, 0)
	if a, b := first[0].Metrics["duration_s"], second[0].Metrics["duration_s"]; a >= b {
		t.Errorf("a 30× iteration overhead did not lengthen the run: %v s then %v s", a, b)
	}
	// The trace loses its last request.
	lines := strings.SplitAfter(tr.String(), "\n")
	if err := os.WriteFile(tracePath, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	third := run(2, 0)
	if n := third[0].Metrics["completed"]; n != 59 {
		t.Errorf("%g requests completed after the trace lost one, want 59", n)
	}
}

// Errors about a point cite the user's experiment file and the line of the
// axis (or base key) that set the field, never a line of the document built
// from base and axis values. smallSweep's lines: 3 seeds, 8 base requests,
// 13 the batch axis's values, 16 the rate axis's values.
func TestSweepErrorsCiteTheFile(t *testing.T) {
	checkSweepErrs(t, []sweepErrCase{
		{"misspelt field", strings.Replace(smallSweep, `field = "workload.rate"`, `field = "workload.rat"`, 1),
			`sweep.toml line 16: axis "workload.rat" value 3`},
		{"wrong type", strings.Replace(smallSweep, "values = [3, 9.5]", `values = [3, "fast"]`, 1),
			`sweep.toml line 16: axis "workload.rate" value fast`},
		{"out of range", strings.Replace(smallSweep, "values = [3, 9.5]", "values = [3, -1]", 1),
			`sweep.toml line 16: axis "workload.rate" value -1`},
		{"bad key in a table value", strings.Replace(smallSweep, `{policy = "prefill-first"}`, `{policy = "prefill-first", max_num_seq = 4}`, 1),
			`sweep.toml line 13: axis "batch" value max_num_seq=4 policy=prefill-first`},
		{"bad base value", strings.Replace(smallSweep, "requests = 150", "requests = -5", 1), "sweep.toml line 8: [base]"},
		{"duplicate value", strings.Replace(smallSweep, "values = [3, 9.5]", "values = [3, 9.5, 3.0]", 1),
			`sweep.toml line 16: axis "workload.rate": value 3 is given twice (values 1 and 3)`},
		{"duplicate seed", strings.Replace(smallSweep, "seeds = [1, 2]", "seeds = [1, 2, 1]", 1), "sweep.toml line 3: seeds: seed 1 is given twice"},
		{"duplicate label", strings.Replace(smallSweep, "values = [3, 9.5]", "values = [3, 9.5]\nlabels = [\"x\", \"x\"]", 1), `label "x" is given twice`},
		{"same scenario twice", strings.Replace(strings.Replace(smallSweep, `field = "workload.rate"`+"\nvalues = [3, 9.5]", `field = "router.policy"`+"\nvalues = [\"\", \"round-robin\"]", 1), "requests = 150", "requests = 150\nrate = 3", 1),
			"resolve to the same scenario"}, // "" means round-robin
		{"path in name", strings.Replace(smallSweep, `name = "small"`, `name = "../../escape"`, 1), `sweep.toml line 2: name "../../escape" has '/'`},
		{"dot name", strings.Replace(smallSweep, `name = "small"`, `name = ".."`, 1), `name ".." starts with '.'`},
		{"a scenario file", "model = \"llama-3.1-8b\"\n[workload]\nrate = 2\n", "an experiment needs a [base] scenario and [[axis]] tables (field = a scenario field, values = [...]) (this looks like a scenario"},
		{"no axes", "[base]\nmodel = \"llama-3.1-8b\"\n", "no [[axis]] and no seeds"},
		{"huge duration", strings.Replace(smallSweep, `field = "workload.rate"`+"\nvalues = [3, 9.5]", `field = "batch.max_wait_ms"`+"\nvalues = [1e300]", 1),
			"sweep.toml"}, // an error (out of range), not a panic
	}, func(t *testing.T, c sweepErrCase, err error) {
		if strings.Contains(err.Error(), "line 8") && c.name != "bad base value" {
			t.Errorf("error %v cites a line it should not", err)
		}
	})
}

// merge names a results directory that does not exist, or that holds no
// sweep output, instead of counting its points as missing.
func TestCollectNamesMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "nope"), "nope does not exist"},
		{dir, "has no points/ folder"},
	} {
		if _, err := Collect(nil, c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Collect(%s): error %v, want one containing %q", c.dir, err, c.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"batching", true}, {"rate-sweep_2.v1", true}, {"", false}, {"..", false}, {".hidden", false},
		{"a/b", false}, {`a\b`, false}, {"../../escape", false}, {"with space", false}, {"a:b", false},
	} {
		if err := CheckName(c.name); (err == nil) != c.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestResultsCountsAreIntegers checks that results.csv writes its count
// columns as integers and every other column with 4 decimals.
func TestResultsCountsAreIntegers(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		want string
	}{
		{"completed", 4000, "4000"},
		{"rejected", 0, "0"},
		{"preemptions", 17, "17"},
		{"gpus", 8, "8"},
		{"gpus", math.NaN(), "NaN"},     // not an integer: as any metric
		{"gpus", 2.5, "2.5000"},         // an average is not a count
		{"duration_s", 71, "71.0000"},   // not a count
		{"slo_attainment", 1, "1.0000"}, // a fraction
	} {
		if got := formatMetric(tc.name, tc.v); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
}

// Points resolved on one worker and on eight are the same points with the
// same keys, and bad values give the same error: the first in point order
// (every point's rate is bad here; point 0's is −1, point 2's −2).
func TestPointsWorkersIdentical(t *testing.T) {
	sw, err := LoadSweep(writeSweep(t, smallSweep))
	if err != nil {
		t.Fatal(err)
	}
	var keys [2][]string
	for k, workers := range []int{1, 8} {
		pts, err := sw.PointsJ(workers)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			keys[k] = append(keys[k], fmt.Sprintf("%d %v %d %s", p.Index, p.Labels, p.Seed, p.Key()))
			if p.Key() != p.computeKey() {
				t.Errorf("point %d: cached key %s, computed %s", p.Index, p.Key(), p.computeKey())
			}
		}
	}
	if strings.Join(keys[0], "\n") != strings.Join(keys[1], "\n") {
		t.Fatalf("1 worker:\n%s\n8 workers:\n%s", strings.Join(keys[0], "\n"), strings.Join(keys[1], "\n"))
	}
	bad, err := LoadSweep(writeSweep(t, strings.Replace(smallSweep, "values = [3, 9.5]", "values = [-1, -2]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	var msgs [2]string
	for k, workers := range []int{1, 8} {
		_, err := bad.PointsJ(workers)
		if err == nil {
			t.Fatal("no error for a negative rate")
		}
		msgs[k] = err.Error()
	}
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], "workload.rate=-1") {
		t.Errorf("errors: 1 worker %q, 8 workers %q (want both about workload.rate=-1)", msgs[0], msgs[1])
	}
}

// TestCloneTOMLIndependent: a point's copy of the base's TOML values shares
// no table or array with the base, so one point's axis values never reach
// another's (the base is decoded once per sweep).
func TestCloneTOMLIndependent(t *testing.T) {
	base := map[string]any{
		"batch":  map[string]any{"policy": "chunked", "inner": map[string]any{"x": int64(1)}},
		"pools":  []map[string]any{{"gpu": "h100"}},
		"values": []any{int64(1), map[string]any{"y": 2.0}},
		"name":   "n",
	}
	c := cloneTOML(base).(map[string]any)
	c["batch"].(map[string]any)["policy"] = "static"
	c["batch"].(map[string]any)["inner"].(map[string]any)["x"] = int64(9)
	c["pools"].([]map[string]any)[0]["gpu"] = "b200"
	c["values"].([]any)[1].(map[string]any)["y"] = 5.0
	c["name"] = "m"
	b := base["batch"].(map[string]any)
	if b["policy"] != "chunked" || b["inner"].(map[string]any)["x"] != int64(1) ||
		base["pools"].([]map[string]any)[0]["gpu"] != "h100" ||
		base["values"].([]any)[1].(map[string]any)["y"] != 2.0 || base["name"] != "n" {
		t.Fatalf("changing the copy changed the base: %v", base)
	}
}
