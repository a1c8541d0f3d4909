package plan

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/models"
)

func catalogModel(t *testing.T, name string) *models.Model {
	t.Helper()
	m, err := models.Builtin().Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func choiceNames(ls []layoutChoice) []string {
	var out []string
	for _, l := range ls {
		s := l.String()
		if l.skip != "" {
			s += " (skipped)"
		}
		out = append(out, s)
	}
	return out
}

// The layouts a search lists: a dense model gets TP × PP alone whatever
// EP auto says (the layouts searched before DP and EP were); an MoE model
// with EP auto and the default DP degrees gets each DP × TP ≤ 8 (one HGX
// node) with and without EP, EP left out where its group (a stage's DP ×
// TP) is one GPU; EP on lists those with the reason; EP off is TP × PP.
// Pipelines get EP like the others (EP × PP: the group is per stage).
func TestLayoutSpace(t *testing.T) {
	dense, moe := catalogModel(t, "llama-3.1-8b"), catalogModel(t, "qwen3-30b-a3b")
	cases := []struct {
		name     string
		m        *models.Model
		tps, pps []int
		dps      []int
		ep, def  string
		node     int
		want     []string
	}{
		{"dense, plan defaults", dense, []int{1, 2}, []int{1, 2}, nil, "", EPAuto, 8,
			[]string{"TP1", "TP2", "PP2×TP1", "PP2×TP2"}},
		{"moe, EP off", moe, []int{1, 2}, []int{1, 2}, nil, EPOff, EPAuto, 8,
			[]string{"TP1", "TP2", "PP2×TP1", "PP2×TP2"}},
		{"moe, place default (off)", moe, []int{1, 2}, nil, nil, "", EPOff, 8,
			[]string{"TP1", "TP2"}},
		// DP 1, 2, 4, 8 with DP × TP × PP ≤ 8: DP 4 × TP 4 (16) and DP 8 ×
		// TP 2 (16) are left out; at PP 2, DP 4 × TP 2 × 2 = 16 too.
		{"moe, plan defaults", moe, []int{1, 2, 4}, []int{1, 2}, nil, "", EPAuto, 8,
			[]string{"TP1", "TP2", "TP2 EP2", "TP4", "TP4 EP4",
				"DP2×TP1", "DP2×TP1 EP2", "DP2×TP2", "DP2×TP2 EP4", "DP2×TP4", "DP2×TP4 EP8",
				"DP4×TP1", "DP4×TP1 EP4", "DP4×TP2", "DP4×TP2 EP8",
				"DP8×TP1", "DP8×TP1 EP8",
				"PP2×TP1", "PP2×TP2", "PP2×TP2 EP2", "PP2×TP4", "PP2×TP4 EP4",
				"DP2×PP2×TP1", "DP2×PP2×TP1 EP2", "DP2×PP2×TP2", "DP2×PP2×TP2 EP4", "DP4×PP2×TP1", "DP4×PP2×TP1 EP4"}},
		// Given DP degrees are all tried, across nodes too (wide EP).
		{"moe, dps given", moe, []int{8}, nil, []int{1, 4}, "", EPAuto, 8,
			[]string{"TP8", "TP8 EP8", "DP4×TP8", "DP4×TP8 EP32"}},
		{"moe, EP on", moe, []int{1, 2}, []int{1, 2}, []int{1, 2}, EPOn, EPAuto, 8,
			[]string{"TP1 EP1 (skipped)", "TP2 EP2", "DP2×TP1 EP2", "DP2×TP2 EP4",
				"PP2×TP1 EP1 (skipped)", "PP2×TP2 EP2", "DP2×PP2×TP1 EP2", "DP2×PP2×TP2 EP4"}},
		// A 72-GPU NVLink domain (GB200 NVL72) admits DP 8 × TP 8.
		{"moe, NVL72", moe, []int{8}, nil, nil, "", EPAuto, 72,
			[]string{"TP8", "TP8 EP8", "DP2×TP8", "DP2×TP8 EP16", "DP4×TP8", "DP4×TP8 EP32", "DP8×TP8", "DP8×TP8 EP64"}},
	}
	for _, c := range cases {
		sp, err := checkLayoutSpace(c.tps, c.pps, c.dps, c.ep, c.def, c.m, "plan")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := choiceNames(sp.layouts(c.m.IsMoE(), c.node)); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		m       *models.Model
		dps     []int
		ep, err string
	}{
		{dense, nil, EPOn, "plan: expert parallelism on: model llama-3.1-8b is dense"},
		{moe, nil, "yes", `plan: expert parallelism "yes": want auto, on or off`},
		{moe, []int{0}, EPAuto, "plan: data-parallel degree 0: must be in [1, 576]"},
		{moe, []int{577}, EPAuto, "plan: data-parallel degree 577: must be in [1, 576]"},
	} {
		if _, err := checkLayoutSpace([]int{1}, nil, c.dps, c.ep, EPAuto, c.m, "plan"); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ep %q dps %v on %s: %v, want %q", c.ep, c.dps, c.m.Name, err, c.err)
		}
	}
}

// epPlanBase is Qwen3-30B-A3B (BF16, 61 GB of weights: one H100 holds it)
// on H100 with a short chat workload, TTFT 1 s and TPOT 50 ms.
func epPlanBase(t *testing.T) scenario.Scenario {
	t.Helper()
	s := epScenario(t, "", "[slo]\nttft_ms = 1000\ntpot_ms = 50\n")
	s.Workload.Requests = 120
	return s
}

// The planner proposes DP and EP layouts for an MoE model and not for a
// dense one; each option's GPUs are replicas × DP × TP, its $/hour those
// GPUs at the catalog's H100 $3.00 (hardware/gpus.toml) and its $/M output
// tokens those of the run of that deployment; planned with and without the
// memo (NoPrune) the rows are the same. The memo's key names DP and EP:
// without them 1×DP2×TP1 EP2 would be served 1×TP1's report at the same
// rate (one GPU and no EP), and the rows would differ.
func TestPlanProposesDPEP(t *testing.T) {
	base := epPlanBase(t)
	o := PlanOptions{Rate: 16, GPUs: []string{"h100"}, TPs: []int{1, 2}, PPs: []int{1}, Duration: 10, MaxGPUs: 16}
	opts, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	// DP 1, 2, 4, 8 × TP 1, 2 within 8 GPUs (DP 8 × TP 2 is 16), each
	// with and without EP but TP 1 alone (a 1-GPU EP group): 7 × 2 − 1.
	var layouts []string
	for _, op := range opts {
		layouts = append(layouts, op.layout().String())
	}
	slices.Sort(layouts)
	want := []string{"DP2×TP1", "DP2×TP1 EP2", "DP2×TP2", "DP2×TP2 EP4", "DP4×TP1", "DP4×TP1 EP4", "DP4×TP2", "DP4×TP2 EP8", "DP8×TP1", "DP8×TP1 EP8", "TP1", "TP2", "TP2 EP2"}
	if !slices.Equal(layouts, want) {
		t.Fatalf("layouts %q, want %q", layouts, want)
	}
	served := 0
	for _, op := range opts {
		if op.Err != "" {
			continue
		}
		served++
		if op.GPUs != op.Replicas*op.DP*op.TP {
			t.Errorf("%s: %d GPUs, want %d × %d × %d", op.Name, op.GPUs, op.Replicas, op.DP, op.TP)
		}
		if op.CostPerHour != 3*float64(op.GPUs) {
			t.Errorf("%s: $%.2f/hour for %d GPUs at $3.00", op.Name, op.CostPerHour, op.GPUs)
		}
		if want := "colocated " + strconv.Itoa(op.Replicas) + "×" + op.layout().String(); op.Name != want {
			t.Errorf("name %q, want %q", op.Name, want)
		}
	}
	if served < 2 {
		t.Fatalf("%d DP/EP options serve: the checks compare too few", served)
	}
	// The $/M of a DP × EP row is that of its own run (GPUs counted with dp).
	i := slices.IndexFunc(opts, func(op Option) bool { return op.DP == 2 && op.TP == 1 && op.EP })
	if op := opts[i]; op.Err == "" {
		rep, err := evaluateRun(base, PlanOptions{Rate: o.Rate, Duration: o.Duration}, &Placement{Replicas: op.Replicas, TP: 1, DP: 2, EP: true, GPUs: op.GPUs})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Plan.Expert == nil || rep.Plan.Replicas != 2*op.Replicas || rep.CostPerHour() != op.CostPerHour {
			t.Errorf("the run of %s: expert %v, %d instances, $%.2f/hour", op.Name, rep.Plan.Expert != nil, rep.Plan.Replicas, rep.CostPerHour())
		}
		if want := scenario.PerMillion(rep.CostPerHour(), rep.SteadyOutputThroughput()); op.CostPerMOutTok != want || !(want > 0) {
			t.Errorf("%s: $%.4f/M output tokens, its run gives $%.4f/M", op.Name, op.CostPerMOutTok, want)
		}
	} else {
		t.Errorf("1×DP2×TP1 EP2 does not serve 16 req/s: %s", op.Err)
	}
	var csv bytes.Buffer
	if err := WritePlanCSV(&csv, opts); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(csv.String(), "\n")[1:] {
		if f := strings.Split(line, ","); strings.Contains(line, "DP4×TP2 EP8") && (f[6] != "4" || f[7] != "8") {
			t.Errorf("CSV row %q: dp %s, ep %s, want 4 and 8", line, f[6], f[7])
		}
	}
	o.NoPrune = true
	full, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range full {
		if a, b := optionRow(opts[i]), optionRow(full[i]); a != b {
			t.Errorf("option %d:\n memo    %s\n no memo %s", i, a, b)
		}
	}
	for _, op := range opts {
		t.Log(optionRow(op))
	}

	// Llama-3.1-8B, dense: the same search plans TP 1 and TP 2 alone.
	dense := base
	dense.Model = "llama-3.1-8b"
	opts, err = PlanCapacity(dense, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 || opts[0].DP > 1 || opts[1].DP > 1 || opts[0].EP || opts[1].EP {
		t.Errorf("dense model: %d options (%v, %v), want TP1 and TP2 without DP or EP", len(opts), opts[0].layout(), opts[len(opts)-1].layout())
	}
	if _, err := PlanCapacity(dense, PlanOptions{Rate: 16, TPs: []int{2}, EP: EPOn}); err == nil || !strings.Contains(err.Error(), "model llama-3.1-8b is dense") {
		t.Errorf("dense model, EP on: %v", err)
	}
}

// Placement searches DP and EP layouts of colocated candidates when asked
// (Qwen3-30B-A3B, 2 H100s, TP 1, DP 1 and 2, EP auto): 1×TP1, 2×TP1,
// 1×DP2×TP1 and 1×DP2×TP1 EP2, each of 1 or 2 GPUs; the disaggregated
// candidates stay at DP 1 without EP.
func TestPlaceDPEPLayouts(t *testing.T) {
	base := epPlanBase(t)
	ps, err := Place(base, PlaceOptions{GPUs: 2, TPs: []int{1}, DPs: []int{1, 2}, EP: EPAuto, MinDuration: 10, Precision: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, p := range ps {
		gpus[p.Name] = p.GPUs
		if p.Disagg && (p.DP > 1 || p.EP) {
			t.Errorf("%s: DP %d, EP %v", p.Name, p.DP, p.EP)
		}
	}
	for name, n := range map[string]int{"colocated 1×TP1": 1, "colocated 2×TP1": 2, "colocated 1×DP2×TP1": 2, "colocated 1×DP2×TP1 EP2": 2, "disagg 1×TP1 + 1×TP1": 2} {
		if gpus[name] != n {
			t.Errorf("%s: %d GPUs, want %d (candidates %v)", name, gpus[name], n, gpus)
		}
	}
	if len(ps) != 5 {
		t.Errorf("%d candidates, want 5: %v", len(ps), gpus)
	}
	for _, p := range ps {
		t.Logf("%s: %.2f req/s, %.3f per GPU, %s", p.Name, p.Rate, p.PerGPU, p.Err)
	}
}

// The memo's key names every layout field: two deployments that differ in
// one of them never share a simulated point.
func TestProbeKeyLayoutFields(t *testing.T) {
	base := scenario.Default()
	c0 := Placement{Replicas: 1, TP: 2, PP: 1, DP: 1}
	for _, c := range []struct {
		field string
		set   func(*Placement)
	}{
		{"replicas", func(c *Placement) { c.Replicas = 2 }},
		{"tp", func(c *Placement) { c.TP = 4 }},
		{"pp", func(c *Placement) { c.PP = 2 }},
		{"dp", func(c *Placement) { c.DP = 2 }},
		{"ep", func(c *Placement) { c.EP = true }},
		{"disagg", func(c *Placement) { c.Disagg = true }},
		{"decode replicas", func(c *Placement) { c.DecodeRep = 3 }},
		{"decode tp", func(c *Placement) { c.DecodeTP = 2 }},
	} {
		c1 := c0
		c.set(&c1)
		if a, b := probeKey("plan", base, &c0, 1), probeKey("plan", base, &c1, 1); a == b {
			t.Errorf("%s: %q for both", c.field, a)
		}
	}
	// DP and PP 0 are 1 (none): the same deployment, the same key.
	c1 := c0
	c1.DP, c1.PP = 0, 0
	if a, b := probeKey("plan", base, &c0, 1), probeKey("plan", base, &c1, 1); a != b {
		t.Errorf("DP 0 and 1: %q, %q", a, b)
	}
}
