package scenario

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Metamorphic: on every golden scenario, vllm-v1 with every mechanism off
// gives the ideal engine's metrics exactly (testdata/golden/ideal pins
// ideal), and the default is vllm-v1 named explicitly.
func TestEngineOffIsIdealOnGoldens(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := LoadScenario(f)
			if err != nil {
				t.Fatal(err)
			}
			allOff := &Engine{Name: "vllm-v1", NoAsyncScheduling: true, NoFrontEnd: true, NoStepCPU: true, NoCustomAllReduce: true, NoMemoryProfile: true,
				NoCPUOverlap: true, NoLaunches: true, NoVLLMDefaults: true, NoFusedAddNorm: true}
			if !reflect.DeepEqual(engineMetrics(t, s, allOff), engineMetrics(t, s, &Engine{Name: "ideal"})) {
				t.Fatalf("engine %+v: metrics differ from ideal's", *allOff)
			}
		})
	}
}

// The default engine is vllm-v1 with everything on: a scenario naming no
// engine runs exactly as one naming vllm-v1.
func TestDefaultEngineIsVLLMV1(t *testing.T) {
	s := small()
	if !reflect.DeepEqual(engineMetrics(t, s, nil), engineMetrics(t, s, &Engine{Name: "vllm-v1"})) {
		t.Fatal("a scenario naming no engine differs from one naming vllm-v1")
	}
}

// engineMetrics runs s under engine e and returns its summary and result.
func engineMetrics(t *testing.T, s Scenario, e *Engine) []any {
	t.Helper()
	s.Engine = e
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	return []any{rep.Summary, rep.Result}
}

// The ablation's rows: all off equals ideal, and vllm-v1 raises the mean
// TTFT over ideal (the engine's point).
func TestAblation(t *testing.T) {
	s := small()
	s.Workload.Requests = 100
	rows, err := Ablation(s)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]AblationRow{}
	for _, r := range rows {
		by[r.Variant] = r
	}
	if len(rows) != 13 || !reflect.DeepEqual(by["all off"].Summary, by["ideal"].Summary) {
		t.Fatalf("%d rows; all off and ideal differ", len(rows))
	}
	if !(by["vllm-v1"].Summary.TTFT.Mean > by["ideal"].Summary.TTFT.Mean) {
		t.Fatalf("vllm-v1 TTFT %v not above ideal %v", by["vllm-v1"].Summary.TTFT.Mean, by["ideal"].Summary.TTFT.Mean)
	}
	var b strings.Builder
	if err := WriteAblation(&b, rows); err != nil || strings.Count(b.String(), "\n") != 15 {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

// [engine] errors name the field and the flag.
func TestEngineBadInput(t *testing.T) {
	cases := []struct {
		e    Engine
		want string
	}{
		{Engine{Name: "tgi"}, `field "engine.name" (flag --engine): unknown engine "tgi"`},
		{Engine{Name: "ideal", NoAsyncScheduling: true}, `field "engine.name" (flag --engine): engine "ideal" has no mechanisms`},
		{Engine{Name: "ideal", NoFrontEnd: true}, `engine "ideal" has no mechanisms`},
		{Engine{Name: "vllm-v1", RequestMs: -1}, `field "engine.front_end_request_ms" (flag --front-end-request-ms)`},
		{Engine{Name: "vllm-v1", CustomARLatencyUs: -1}, `field "engine.custom_all_reduce_latency_us" (flag --custom-all-reduce-latency-us)`},
		{Engine{Name: "vllm-v1", NonTorchGiB: -1}, `field "engine.non_torch_memory_gib" (flag --non-torch-memory-gib)`},
		{Engine{Name: "ideal", NoCustomAllReduce: true}, `engine "ideal" has no mechanisms`},
	}
	for _, c := range cases {
		s := small()
		s.Engine = &c.e
		_, err := s.Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.e, err, c.want)
		}
	}
}

// BenchmarkSimulate100kVLLMV1 is BenchmarkSimulate100k with the vllm-v1
// engine (every mechanism on).
func BenchmarkSimulate100kVLLMV1(b *testing.B) {
	s := Default()
	s.Workload.Rate = 17
	s.Workload.Requests = 100_000
	s.Engine = &Engine{Name: "vllm-v1"}
	benchRun(b, s)
}
