package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/internal/bounded"
	"github.com/servesim/servesim/sim/workload/trace"
)

// maxDatasetBytes bounds a --dataset-path file, read whole: 2 GiB, about
// three times the largest data set vllm bench serve reads (ShareGPT V3's
// raw JSON, under 700 MB; BurstGPT's CSV is 52 MB, datasets/manifest.toml).
const maxDatasetBytes = 2 << 30

// datasetFlags are `vllm bench serve`'s dataset flags.
type datasetFlags struct {
	name, path                 string
	inputLen, outputLen        int
	generalInputLen            int // vllm bench's --input-len
	rangeRatio                 float64
	sharegptOutputLen          int
	explicitRandom, anyDataset bool
	implied                    bool // vllm bench serve's default dataset, random (vllmDefaults)
}

// vLLM's RandomDataset defaults (vllm/benchmarks/datasets/random.py).
const (
	vllmRandomInputLen  = 1024
	vllmRandomOutputLen = 128
	vllmNumPrompts      = 1000 // vllm bench serve --num-prompts
)

func addDatasetFlags(fs *pflag.FlagSet, d *datasetFlags) {
	fs.StringVar(&d.name, "dataset-name", "", "vLLM bench's dataset: random, sharegpt, burstgpt (with --dataset-path), or servesim (a trace file, as --trace)")
	fs.StringVar(&d.path, "dataset-path", "", "the dataset file: ShareGPT JSON as distributed, a BurstGPT CSV, or a trace")
	fs.IntVar(&d.inputLen, "random-input-len", vllmRandomInputLen, "random dataset: mean prompt tokens")
	fs.IntVar(&d.outputLen, "random-output-len", vllmRandomOutputLen, "random dataset: mean output tokens")
	fs.IntVar(&d.generalInputLen, "input-len", 0, "vLLM bench's general input length: the random dataset's --random-input-len (a bare --output-len N is the output's)")
	fs.Float64Var(&d.rangeRatio, "random-range-ratio", 0, "random dataset: lengths uniform on [⌊L·(1−r)⌋, ⌈L·(1+r)⌉], r in [0, 1)")
	fs.IntVar(&d.sharegptOutputLen, "sharegpt-output-len", 0, "sharegpt dataset: every output this many tokens instead of the reply's")
}

// applyDataset turns the dataset flags into the base scenario's workload:
// random sets the prompt and output length distributions; sharegpt and
// burstgpt sample the file as vLLM does and write the requests to
// DIR/dataset.csv (a servesim trace, every arrival at 0), replayed with the
// scenario's rate and burstiness; servesim replays the file as --trace.
// dir is the output directory ("" : a temporary one, removed by cleanup).
func applyDataset(fs *pflag.FlagSet, d *datasetFlags, base *scenario.Scenario, dir string) (cleanup func(), err error) {
	cleanup = func() {}
	random := fs.Changed("random-input-len") || fs.Changed("random-output-len") || fs.Changed("random-range-ratio") || fs.Changed("input-len")
	if !fs.Changed("dataset-name") {
		if fs.Changed("dataset-path") {
			return cleanup, errors.New("run: --dataset-path needs --dataset-name (sharegpt, burstgpt or servesim)")
		}
		if !random && !d.implied {
			return cleanup, nil
		}
		d.name = "random" // vllm bench serve's default dataset
	}
	if fs.Changed("sharegpt-output-len") && d.name != "sharegpt" {
		return cleanup, fmt.Errorf("run: --sharegpt-output-len applies to --dataset-name sharegpt, not %q", d.name)
	}
	if random && d.name != "random" {
		return cleanup, fmt.Errorf("run: --random-input-len, --random-output-len and --random-range-ratio apply to --dataset-name random, not %q", d.name)
	}
	if err := d.generalLengths(fs); err != nil {
		return cleanup, err
	}
	switch d.name {
	case "random":
		if d.path != "" {
			return cleanup, fmt.Errorf("run: --dataset-name random takes no --dataset-path (got %q), as in vLLM", d.path)
		}
		p, o, err := randomLengths(d.inputLen, d.outputLen, d.rangeRatio)
		if err != nil {
			return cleanup, err
		}
		base.Workload.Prompt, base.Workload.Output = p, o
		base.SetByFlag("workload.prompt")
		base.SetByFlag("workload.output")
		return cleanup, nil
	case "sharegpt", "burstgpt", "servesim":
	default:
		return cleanup, fmt.Errorf("run: --dataset-name %q: want random, sharegpt, burstgpt or servesim", d.name)
	}
	if d.path == "" {
		return cleanup, fmt.Errorf("run: --dataset-name %s needs --dataset-path FILE", d.name)
	}
	if d.name == "servesim" {
		base.Workload.Trace = &trace.Options{File: d.path}
		return cleanup, nil
	}
	n := base.Workload.Requests
	if n <= 0 {
		n = vllmNumPrompts
	}
	data, err := bounded.ReadFile(d.path, maxDatasetBytes)
	if err != nil {
		return cleanup, fmt.Errorf("run: --dataset-path: %w", err)
	}
	r := rand.New(rand.NewPCG(base.Seed, 0x5eed_da7a))
	var reqs []lengths
	if d.name == "sharegpt" {
		reqs, err = sampleShareGPT(d.path, data, n, d.sharegptOutputLen, r)
	} else {
		reqs, err = sampleBurstGPT(d.path, data, n, r)
	}
	if err != nil {
		return cleanup, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "servesim-dataset-"); err != nil {
			return cleanup, err
		}
		tmp := dir
		cleanup = func() { os.RemoveAll(tmp) }
	} else if err := scenario.MkdirAll(dir); err != nil {
		return cleanup, err
	}
	file := filepath.Join(dir, "dataset.csv")
	var buf bytes.Buffer
	buf.WriteString("arrival_s,prompt_tokens,output_tokens\n")
	for _, q := range reqs {
		fmt.Fprintf(&buf, "0,%d,%d\n", q.prompt, q.output)
	}
	if err := scenario.WriteFileAtomic(file, buf.Bytes()); err != nil {
		return cleanup, err
	}
	opt := &trace.Options{File: file, Format: "servesim"}
	if rate := base.Workload.Rate; !math.IsInf(rate, 1) {
		// vllm bench serve: gamma gaps of shape burstiness (1: Poisson).
		opt.Arrival, opt.Rate = "poisson", rate
		if b := base.Workload.Burstiness; b != 0 && b != 1 {
			opt.Arrival, opt.Burstiness = "gamma", b
		}
	}
	base.Workload.Trace = opt
	return cleanup, nil
}

// generalLengths applies vllm bench's general lengths, which its main
// maps to the datasets' own before sampling (serve.py: --input-len to
// random_input_len; --output-len to random_output_len and
// sharegpt_output_len): --input-len, and servesim's --prompt-len and
// --output-len when they are a bare whole number N (servesim reads that
// as constant:N). A length distribution beside a dataset that draws its
// own lengths is a contradiction, an error naming both.
func (d *datasetFlags) generalLengths(fs *pflag.FlagSet) error {
	if fs.Changed("input-len") {
		d.inputLen = d.generalInputLen
	}
	for _, g := range []struct {
		flag, random string
		dst          *int
		dataset      string // the other dataset that takes it
	}{
		{"prompt-len", "random-input-len", &d.inputLen, ""},
		{"output-len", "random-output-len", &d.outputLen, "sharegpt"},
	} {
		if !fs.Changed(g.flag) {
			continue
		}
		v := fs.Lookup(g.flag).Value.String()
		n, err := strconv.Atoi(strings.TrimSpace(v))
		whole := err == nil && n >= 1
		switch {
		case d.name == "random" && whole && !fs.Changed(g.random) && !(g.flag == "prompt-len" && fs.Changed("input-len")):
			*g.dst = n
		case d.name == "sharegpt" && g.dataset == "sharegpt" && whole && !fs.Changed("sharegpt-output-len"):
			d.sharegptOutputLen = n
		case d.name == "random":
			return fmt.Errorf("run: --%s %s and --dataset-name random both set the lengths: give --%s (and --random-range-ratio), or a bare --%s N", g.flag, v, g.random, g.flag)
		default:
			return fmt.Errorf("run: --%s %s and --dataset-name %s: the dataset gives the lengths, so --%s would be dropped", g.flag, v, d.name, g.flag)
		}
	}
	return nil
}

// randomLengths returns vLLM's RandomDataset lengths as servesim
// distributions: integers uniform on [⌊L·(1−r)⌋, ⌈L·(1+r)⌉], both ends
// included (get_sampling_params: rng.integers(low, high+1)), the output's
// low end at least 1. A continuous uniform on [lo−½, hi+½) rounds to each
// of those integers with the same probability. vLLM also subtracts the
// tokenizer's special tokens from the input length; with no tokenizer here
// none are.
func randomLengths(in, out int, r float64) (prompt, output string, err error) {
	if !(r >= 0 && r < 1) {
		return "", "", fmt.Errorf("run: --random-range-ratio %v: must be in [0, 1), as in vLLM", r)
	}
	if in < 1 || out < 1 {
		return "", "", fmt.Errorf("run: --random-input-len %d and --random-output-len %d must be ≥ 1", in, out)
	}
	inLo, inHi := math.Floor(float64(in)*(1-r)), math.Ceil(float64(in)*(1+r))
	outLo, outHi := math.Max(1, math.Floor(float64(out)*(1-r))), math.Max(1, math.Ceil(float64(out)*(1+r)))
	if inLo < 1 {
		return "", "", fmt.Errorf("run: --random-input-len %d with --random-range-ratio %v can draw an empty prompt (⌊%d·(1−%v)⌋ = 0)", in, r, in, r)
	}
	dist := func(lo, hi float64) string {
		if lo == hi {
			return "constant:" + strconv.FormatFloat(lo, 'f', -1, 64)
		}
		return fmt.Sprintf("uniform:%g,%g", lo-0.5, hi+0.5)
	}
	return dist(inLo, inHi), dist(outLo, outHi), nil
}

type lengths struct{ prompt, output int }

// charsPerToken estimates tokens from text without a tokenizer: about four
// characters of English text per token, OpenAI's rule of thumb ("What are
// tokens and how to count them?", help.openai.com: "1 token ≈ 4 chars in
// English").
const charsPerToken = 4

func estimateTokens(text string) int {
	return max(1, int(math.Round(float64(utf8.RuneCountInString(text))/charsPerToken)))
}

// shareGPTTurn is one turn of a ShareGPT conversation; num_tokens, when a
// file carries it, replaces the estimate from the text.
type shareGPTTurn struct {
	From      string `json:"from"`
	Value     string `json:"value"`
	NumTokens *int   `json:"num_tokens"`
}

func (t shareGPTTurn) tokens() int {
	if t.NumTokens != nil {
		return *t.NumTokens
	}
	return estimateTokens(t.Value)
}

// sampleShareGPT samples n requests from a ShareGPT JSON file as vLLM's
// ShareGPTDataset does (vllm/benchmarks/datasets/sharegpt.py): entries
// with at least two turns, shuffled; the first turn is the prompt and the
// second's length the output (or outputLen when > 0); a pair is kept when
// is_valid_sequence holds (prompt and output ≥ 4 tokens, the output check
// skipped with outputLen; prompt ≤ 1024; prompt + output ≤ 2048); too few
// kept are topped up with random repeats (maybe_oversample_requests). The
// shuffle and the repeats use servesim's seed, so the sample is not the
// one vLLM draws with the same seed.
func sampleShareGPT(path string, data []byte, n, outputLen int, r *rand.Rand) ([]lengths, error) {
	var entries []struct {
		Conversations []shareGPTTurn `json:"conversations"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("run: %s: not ShareGPT JSON (a list of {\"id\", \"conversations\": [{\"from\", \"value\"}, ...]}): %v", path, err)
	}
	var convs [][]shareGPTTurn
	for _, e := range entries {
		if len(e.Conversations) >= 2 {
			convs = append(convs, e.Conversations)
		}
	}
	r.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	var out []lengths
	for _, c := range convs {
		if len(out) >= n {
			break
		}
		p, o := c[0].tokens(), c[1].tokens()
		if outputLen > 0 {
			o = outputLen
		}
		if p < 4 || (outputLen == 0 && o < 4) || p > 1024 || p+o > 2048 {
			continue
		}
		out = append(out, lengths{p, o})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("run: %s: no conversation passes vLLM's ShareGPT filter (two turns; prompt 4..1024 tokens, output ≥ 4, total ≤ 2048; ~%d characters a token)", path, charsPerToken)
	}
	return oversample(out, n, r), nil
}

// sampleBurstGPT samples n requests from a BurstGPT CSV as vLLM's
// BurstGPTDataset does (vllm/benchmarks/datasets/burstgpt.py): rows of
// Model "GPT-4" with Response tokens > 0, n of them drawn without
// replacement (with replacement when the file has fewer), Request tokens
// as the prompt and Response tokens as the output. Timestamps are not
// used: vLLM paces BurstGPT requests by --request-rate.
func sampleBurstGPT(path string, data []byte, n int, r *rand.Rand) ([]lengths, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("run: %s: reading the BurstGPT header: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{"Model", "Request tokens", "Response tokens"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("run: %s line 1: no %q column (BurstGPT's columns: Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type)", path, c)
		}
	}
	var rows []lengths
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("run: %s: %v", path, err)
		}
		if rec[col["Model"]] != "GPT-4" {
			continue
		}
		p, err1 := strconv.Atoi(rec[col["Request tokens"]])
		o, err2 := strconv.Atoi(rec[col["Response tokens"]])
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("run: %s line %d: Request tokens %q and Response tokens %q must be whole numbers", path, line, rec[col["Request tokens"]], rec[col["Response tokens"]])
		}
		if o > 0 && p > 0 {
			rows = append(rows, lengths{p, o})
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("run: %s: no GPT-4 row with Response tokens > 0 (vLLM's BurstGPT filter)", path)
	}
	if n > len(rows) {
		out := make([]lengths, n)
		for i := range out {
			out[i] = rows[r.IntN(len(rows))]
		}
		return out, nil
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return rows[:n], nil
}

// oversample tops reqs up to n with random repeats.
func oversample(reqs []lengths, n int, r *rand.Rand) []lengths {
	k := len(reqs)
	for len(reqs) < n {
		reqs = append(reqs, reqs[r.IntN(k)])
	}
	return reqs
}
