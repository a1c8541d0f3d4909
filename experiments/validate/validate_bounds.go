package validate

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/experiments/realrun"
)

// The largest real run in ../shared/data: vllm-h100-runs'
// 20260217-231439-llama-2-7b-tp1-general, 8 req/s × 600 s + 20 req/s ×
// 600 s = 4,800 + 12,000 = 16,800 requests of 575.5 (prompt_len_mean) +
// 248 (output_len) tokens = 13,833,960 tokens (the 70B and 34B general
// runs send the same requests with a few fewer prompt tokens; the largest
// sim2real run, 1 req/s × 1200 s of 934 + 100 + 1448, is 2,978,400). A
// replay past MaxReplayScale times either figure is refused unless the
// caller allows it (validate --allow-large): at the suite's pace (16 rows,
// about 70,000 requests, in 2 s) the cap is about a minute of simulation,
// and a workload 100 times larger than anything measured is more likely a
// typo than a run.
const (
	largestRunRequests = 16800
	largestRunTokens   = 13833960
	MaxReplayScale     = 100
	MaxReplayRequests  = MaxReplayScale * largestRunRequests // 1,680,000
	MaxReplayTokens    = MaxReplayScale * largestRunTokens   // 1,383,396,000
)

// ReplaySize returns the requests and tokens (prompt + output) a replay
// of run simulates, and how they were counted. An inference-perf row
// counts its stages as the scenario generates them: int(rate × duration)
// requests per stage (in floating point, so that no figure overflows), of
// prompt_len_mean (or system_prompt_len + question_len) + output_len
// tokens; a per-request run counts its requests.
func ReplaySize(run *realrun.Run) (requests, tokens float64, how string) {
	if r := run.Stage; r != nil {
		how = ""
		for i, st := range r.Stages {
			if i > 0 {
				how += " + "
			}
			requests += math.Floor(st.Rate * st.Seconds)
			how += fmt.Sprintf("%g req/s × %g s", st.Rate, st.Seconds)
		}
		prompt := r.PromptLenMean
		if !(prompt > 0) {
			prompt = float64(r.SystemPromptLen + r.QuestionLen)
		}
		tokens = requests * (prompt + float64(r.OutputLen))
		return requests, tokens, fmt.Sprintf("%s, each of %g prompt + %d output tokens", how, prompt, r.OutputLen)
	}
	in, out := run.TokenTotals()
	return float64(len(run.Requests)), float64(in + out), "the recorded requests"
}

// CheckReplaySize refuses, before any simulation, a run whose replay is
// past MaxReplayRequests requests or MaxReplayTokens tokens, with its
// figures and the flag that allows it.
func CheckReplaySize(runs []*realrun.Run) error {
	for _, run := range runs {
		n, tok, how := ReplaySize(run)
		if n <= MaxReplayRequests && tok <= MaxReplayTokens {
			continue
		}
		return fmt.Errorf("validate: run %s (%s): its workload is %.4g requests and %.4g tokens (%s): past %d× the largest real run in ../shared/data (%d requests, %d tokens: %d and %d at most); --allow-large replays it anyway",
			run.Name, run.Path, n, tok, how, MaxReplayScale, largestRunRequests, largestRunTokens, MaxReplayRequests, MaxReplayTokens)
	}
	return nil
}
