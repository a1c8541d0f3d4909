package validate

import (
	"fmt"
	"io"

	"github.com/servesim/servesim/experiments/scenario"
)

// SuiteAblationRow is one engine variant of the suite's ablation: the
// median |error| of the means over the held-out runs (HeldOut,
// MedianAbsErrors), as fractions.
type SuiteAblationRow struct {
	Variant         string
	TTFT, TPOT, E2E float64
	Runs            int // held-out rows the medians are over
}

// SuiteAblation validates every entry once per variant of AblationEngines
// (vllm-v1, each mechanism off in turn, all off, ideal), each scenario's
// own [engine] parameters kept (after adjust, the caller's overrides), and
// returns the held-out medians per variant. step, when not nil, is called
// after each entry of each variant (progress).
func SuiteAblation(entries []SuiteEntry, dataDir string, base scenario.Scenario, adjust func(*scenario.Scenario), step func()) ([]SuiteAblationRow, error) {
	variants := scenario.AblationEngines(nil)
	rows := make([]SuiteAblationRow, len(variants))
	for k := range variants {
		var vs []*Validation
		for _, e := range entries {
			got, err := e.Validate(dataDir, base, func(sc *scenario.Scenario) {
				if adjust != nil {
					adjust(sc)
				}
				eng := scenario.AblationEngines(sc.Engine)[k].Engine
				sc.Engine = &eng
			})
			if err != nil {
				return nil, fmt.Errorf("%w (ablation row %q)", err, variants[k].Variant)
			}
			vs = append(vs, got...)
			if step != nil {
				step()
			}
		}
		held := HeldOut(vs)
		_, med := MedianAbsErrors(held)
		rows[k] = SuiteAblationRow{Variant: variants[k].Variant, TTFT: med["ttft_mean"], TPOT: med["tpot_mean"], E2E: med["e2e_mean"], Runs: scored(held)}
	}
	return rows, nil
}

// WriteSuiteAblation writes the rows as a Markdown table of the held-out
// medians in percent, for a README.
func WriteSuiteAblation(w io.Writer, rows []SuiteAblationRow) error {
	if _, err := fmt.Fprintln(w, "| engine | TTFT mean | TPOT mean | E2E mean |\n|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "| %s | %.0f%% | %.0f%% | %.0f%% |\n", r.Variant, 100*r.TTFT, 100*r.TPOT, 100*r.E2E); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		if _, err := fmt.Fprintf(w, "\nMedian |error| of the means over the %d held-out rows (nothing fitted on them; summary rows whose stages are listed left out).\n", rows[0].Runs); err != nil {
			return err
		}
	}
	return nil
}
