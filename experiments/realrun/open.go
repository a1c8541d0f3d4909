package realrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open reads the run(s) at path:
//   - a directory holding requests.jsonl and meta.json (and optionally
//     timeseries.csv), or holding them under vllm/ as LLMServingSim's
//     bench/examples/<hw>/<model>/ folders do (whose config.json names the
//     hardware when meta.json does not);
//   - a .json file: a vllm bench serve result;
//   - a .csv file: an inference-perf results table, one Run per row.
func Open(path string) ([]*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("realrun: %w", err)
	}
	if st.IsDir() {
		r, err := openRequestsDir(path)
		if err != nil {
			return nil, err
		}
		return []*Run{r}, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("realrun: %w", err)
		}
		defer f.Close()
		r, _, err := ReadBench(f, path)
		if err != nil {
			return nil, err
		}
		r.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		return []*Run{r}, nil
	case ".csv":
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("realrun: %w", err)
		}
		defer f.Close()
		rows, err := ReadStageRows(f, path)
		if err != nil {
			return nil, err
		}
		var runs []*Run
		for i := range rows {
			row := &rows[i]
			r := &Run{Name: row.Experiment + "/" + row.Scope, Path: fmt.Sprintf("%s line %d", path, row.Line),
				Format: FormatStages, Stage: row,
				Engine: Engine{Model: row.Model, GPU: "h100", TP: row.TP, MaxNumSeqs: row.MaxNumSeqs,
					MaxNumBatchedTokens: row.MaxNumBatchedTokens, MaxModelLen: row.MaxModelLen, PrefixCaching: ptr(true)},
				Notes: row.Notes}
			for _, k := range sortedKeys(row.Args) {
				if err := applyArg(&r.Engine, k, row.Args[k]); err != nil {
					return nil, fmt.Errorf("realrun: %s line %d: column %q: %v", path, row.Line, k, err)
				}
			}
			runs = append(runs, r)
		}
		return runs, nil
	case ".jsonl":
		return Open(filepath.Dir(path))
	}
	return nil, fmt.Errorf("realrun: %s: not a run (want a directory with requests.jsonl and meta.json, a vllm bench serve .json, or an inference-perf .csv)", path)
}

func ptr[T any](v T) *T { return &v }

func openRequestsDir(dir string) (*Run, error) {
	root := dir
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "vllm", "requests.jsonl")); err2 != nil {
			return nil, fmt.Errorf("realrun: %s: no requests.jsonl here or under vllm/ (want a run directory)", dir)
		}
		dir = filepath.Join(dir, "vllm")
	}
	run := &Run{Path: root, Format: FormatRequests, Name: runName(root)}
	mf, err := os.Open(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, fmt.Errorf("realrun: %w (a run needs its engine arguments)", err)
	}
	run.Engine, err = ReadMeta(mf, mf.Name())
	mf.Close()
	if err != nil {
		return nil, err
	}
	run.Notes = append(run.Notes, run.Engine.Notes...)
	if run.Engine.GPU == "" {
		if run.Engine.GPU, err = clusterHardware(filepath.Join(root, "config.json")); err != nil {
			return nil, err
		}
	}
	rf, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("realrun: %w", err)
	}
	run.Requests, err = ReadRequests(rf, rf.Name())
	rf.Close()
	if err != nil {
		return nil, err
	}
	if tf, err := os.Open(filepath.Join(dir, "timeseries.csv")); err == nil {
		run.Series, err = ReadTimeseries(tf, tf.Name())
		tf.Close()
		if err != nil {
			return nil, err
		}
	}
	return run, nil
}

// runName is the last two elements of a run directory ("RTX4090/Llama-3.1-8B").
func runName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	base := filepath.Base(abs)
	if base == "vllm" {
		abs = filepath.Dir(abs)
		base = filepath.Base(abs)
	}
	return filepath.Base(filepath.Dir(abs)) + "/" + base
}

// clusterHardware reads the hardware label of LLMServingSim's cluster
// config (config.json: nodes[0].instances[0].hardware), "" when the file
// or the label is absent. A file that is there must be one JSON object.
func clusterHardware(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil
	}
	var c struct {
		Nodes []struct {
			Instances []struct {
				Hardware string `json:"hardware"`
			} `json:"instances"`
		} `json:"nodes"`
	}
	if err := decodeOne(stripBOM(b), &c, path); err != nil {
		return "", err
	}
	if len(c.Nodes) == 0 || len(c.Nodes[0].Instances) == 0 {
		return "", nil
	}
	return c.Nodes[0].Instances[0].Hardware, nil
}
