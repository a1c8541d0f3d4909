package scenario

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/servesim/servesim/models"
)

// Per-layer expert load skew: the busiest EP rank's routed rows over the
// mean in each MoE layer, given as a list (expert_skew_layers, one value a
// MoE layer in order) or a CSV file (expert_skew_file) of the kind vLLM's
// EPLB and SGLang's expert distribution recorder let one log: a row a MoE
// layer, with the model's layer index and either the max/mean ratio or the
// busiest rank's and the mean rank's load:
//
//	layer,skew          layer,max,mean
//	3,1.21              3,1310,1083
//	4,1.08              4,1170,1083
//
// Every MoE layer of the model (layers first_k_dense … layers − 1) must
// appear exactly once. Each layer's MoE operators and all-to-all are then
// priced at its own skew and summed (hardware.ExpertStep.SetLayerSkews);
// without either field one skew serves every layer (expert_skew, else the
// sourced median).

// maxSkewFileBytes bounds a skew file: a row a layer, a few hundred layers.
const maxSkewFileBytes = 1 << 20

// ReadExpertSkew reads a per-layer skew CSV (see above) for model m at EP
// size ep from r, named name in errors, and returns the skews in MoE-layer
// order.
func ReadExpertSkew(r io.Reader, name string, m *models.Model, ep int) ([]float64, error) {
	if !m.IsMoE() {
		return nil, fmt.Errorf("scenario: %s: model %s is dense: no MoE layers to skew", name, m.Name)
	}
	first, moe := m.DenseLayers, m.Layers-m.DenseLayers
	cr := csv.NewReader(io.LimitReader(r, maxSkewFileBytes+1))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("scenario: %s: empty file: want a header layer,skew or layer,max,mean", name)
	}
	if err != nil {
		return nil, fmt.Errorf("scenario: %s: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("scenario: %s line 1: column %q twice", name, h)
		}
		col[h] = i
	}
	_, hasSkew := col["skew"]
	_, hasMax := col["max"]
	_, hasMean := col["mean"]
	if _, ok := col["layer"]; !ok || hasSkew == (hasMax || hasMean) || hasMax != hasMean {
		return nil, fmt.Errorf("scenario: %s line 1: header %q: want the columns layer,skew or layer,max,mean", name, strings.Join(header, ","))
	}
	skews := make([]float64, moe)
	seen := make([]bool, moe)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("scenario: %s line %d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("scenario: %s: %v", name, err)
		}
		line, _ := cr.FieldPos(0)
		if cr.InputOffset() > maxSkewFileBytes {
			return nil, fmt.Errorf("scenario: %s: more than %d bytes", name, maxSkewFileBytes)
		}
		field := func(c string) (string, error) {
			i := col[c]
			if i >= len(rec) {
				return "", fmt.Errorf("scenario: %s line %d: field %q missing (%d fields, header has %d)", name, line, c, len(rec), len(header))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		num := func(c string) (float64, error) {
			v, err := field(c)
			if err != nil {
				return 0, err
			}
			f, perr := strconv.ParseFloat(v, 64)
			if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, fmt.Errorf("scenario: %s line %d: field %q: %q is not a finite number", name, line, c, v)
			}
			return f, nil
		}
		lv, err := field("layer")
		if err != nil {
			return nil, err
		}
		layer, perr := strconv.Atoi(lv)
		if perr != nil || layer < first || layer >= m.Layers {
			return nil, fmt.Errorf("scenario: %s line %d: field \"layer\": %q is not a MoE layer of %s (layers %d … %d)", name, line, lv, m.Name, first, m.Layers-1)
		}
		if seen[layer-first] {
			return nil, fmt.Errorf("scenario: %s line %d: field \"layer\": layer %d given twice", name, line, layer)
		}
		var skew float64
		if hasSkew {
			if skew, err = num("skew"); err != nil {
				return nil, err
			}
		} else {
			mx, err := num("max")
			if err != nil {
				return nil, err
			}
			mean, err := num("mean")
			if err != nil {
				return nil, err
			}
			if !(mean > 0) || mx < 0 {
				return nil, fmt.Errorf("scenario: %s line %d: field \"mean\": max %v and mean %v: want mean > 0 and max ≥ 0", name, line, mx, mean)
			}
			skew = mx / mean
		}
		if err := checkLayerSkew(skew, ep); err != nil {
			return nil, fmt.Errorf("scenario: %s line %d: layer %d: %v", name, line, layer, err)
		}
		skews[layer-first], seen[layer-first] = skew, true
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("scenario: %s: MoE layer %d of %s has no row (want the %d layers %d … %d, each once)", name, first+i, m.Name, moe, first, m.Layers-1)
		}
	}
	return skews, nil
}

// checkLayerSkew checks one layer's skew: at least 1 (perfect balance) and
// at most ep (every row on one GPU).
func checkLayerSkew(v float64, ep int) error {
	if !(v >= 1) || v > float64(ep) || math.IsInf(v, 0) {
		return fmt.Errorf("skew %v must be in [1, %d] (the busiest EP rank's routed rows over the mean; at most ep, all rows on one GPU)", v, ep)
	}
	return nil
}

// layerSkews returns the scenario's per-layer skews for model m at EP size
// ep (nil when neither expert_skew_layers nor expert_skew_file is given).
func (s *Scenario) layerSkews(m *models.Model, ep int) ([]float64, error) {
	list, file := s.ExpertSkewLayers, s.ExpertSkewFile
	switch {
	case list == nil && file == "":
		return nil, nil
	case list != nil && file != "":
		return nil, s.fieldError("expert_skew_file", "", "and expert_skew_layers both give the per-layer skew: give one")
	case s.Explicit("expert_skew"):
		name := "expert_skew_layers"
		if file != "" {
			name = "expert_skew_file"
		}
		return nil, s.fieldError(name, "", "and expert_skew both give the skew: give one (expert_skew serves every layer)")
	}
	moe := m.Layers - m.DenseLayers
	if file == "" {
		if len(list) != moe {
			return nil, s.fieldError("expert_skew_layers", "", "%d values: model %s has %d MoE layers (%d … %d), one value each", len(list), m.Name, moe, m.DenseLayers, m.Layers-1)
		}
		for i, v := range list {
			if err := checkLayerSkew(v, ep); err != nil {
				return nil, s.fieldError("expert_skew_layers", "", "value %d (layer %d): %v", i+1, m.DenseLayers+i, err)
			}
		}
		return list, nil
	}
	path := s.Path(file)
	f, err := os.Open(path)
	if err != nil {
		return nil, s.fieldError("expert_skew_file", "", "%v", err)
	}
	defer f.Close()
	return ReadExpertSkew(f, path, m, ep)
}
