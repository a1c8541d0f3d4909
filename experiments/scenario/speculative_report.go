package scenario

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// SpecSummary is summary.json's "speculative" section: vLLM's spec-decode
// counters (vllm/v1/spec_decode/metrics.py SpecDecodingStats) and what the
// client saw of them.
type SpecSummary struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	Drafts               int64  `json:"num_drafts"`
	DraftTokens          int64  `json:"num_draft_tokens"`
	AcceptedTokens       int64  `json:"num_accepted_tokens"`
	// AcceptedPerPos is num_accepted_tokens_per_pos; AcceptanceRates the
	// same over num_drafts (vLLM's "Per-position acceptance rate").
	AcceptedPerPos  []int64   `json:"num_accepted_tokens_per_pos"`
	AcceptanceRates []float64 `json:"acceptance_rate_per_pos"`
	// AcceptanceRate is accepted / draft tokens (vLLM's "Draft acceptance
	// rate"); MeanAcceptanceLength 1 + accepted / drafts.
	AcceptanceRate       float64 `json:"draft_acceptance_rate"`
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	// TokensPerStep is the tokens a verification emitted to its request
	// (accepted + the bonus, less those past the request's last token).
	TokensPerStep float64 `json:"tokens_per_verification"`
	// VerifyShare is the target's verification's share of the step time
	// priced for verification and drafting (SpecDecode-Bench measures
	// 42–95 %).
	VerifyShare float64 `json:"verify_share"`
}

func (r *Report) specSummary() *SpecSummary {
	st := r.Result.Spec
	if st == nil {
		return nil
	}
	s := &SpecSummary{
		Method: r.Plan.Scenario.Speculative.Method, NumSpeculativeTokens: st.K,
		Drafts: st.Drafts, DraftTokens: st.DraftTokens, AcceptedTokens: st.Accepted,
		AcceptedPerPos: st.AcceptedPerPos, AcceptanceRates: st.PositionRates(),
	}
	if st.Drafts > 0 {
		s.AcceptanceRate = float64(st.Accepted) / float64(st.DraftTokens)
		s.MeanAcceptanceLength = st.MeanAcceptanceLength()
		s.TokensPerStep = float64(st.Emitted) / float64(st.Drafts)
		s.VerifyShare = st.VerifyShare()
	}
	return s
}

// writeSpecResults prints the spec-decode counters after the summary, in
// its "{:<40} {:<10}" layout.
func (r *Report) writeSpecResults(w io.Writer) error {
	s := r.specSummary()
	if s == nil {
		return nil
	}
	rates := make([]string, len(s.AcceptanceRates))
	for i, a := range s.AcceptanceRates {
		rates[i] = fmt.Sprintf("%.3f", a)
	}
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	_, err := fmt.Fprintf(w, "%s\n%-40s %-10d\n%-40s %-10d\n%-40s %-10s\n%-40s %-10s\n%-40s %s\n%-40s %-10s\n%-40s %-10s\n",
		centre("Speculative decoding", 50),
		"Drafts:", s.Drafts, "Draft tokens:", s.DraftTokens,
		"Draft acceptance rate:", f(s.AcceptanceRate), "Mean acceptance length:", f(s.MeanAcceptanceLength),
		"Per-position acceptance rate:", strings.Join(rates, ", "),
		"Tokens per verification (emitted):", f(s.TokensPerStep),
		"Verification share of spec step (%):", f100(s.VerifyShare))
	return err
}

// f100 formats a share as a percentage.
func f100(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*x)
}

// centre pads a section title with '-' to width, as the summary's.
func centre(t string, width int) string {
	n := max(width-len(t), 0)
	return strings.Repeat("-", n/2) + t + strings.Repeat("-", n-n/2)
}
