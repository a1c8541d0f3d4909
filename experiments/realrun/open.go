package realrun

import (
	"fmt"
	"io"
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
//   - a .csv file: an inference-perf results table, one Run per row;
//   - the sim2real long format: a directory holding experiments.csv and
//     runs_long.csv, or either file (ReadSim2Real), one Run per
//     experiment and scope.
//
// A sim2real experiment with a CPU KV offload tier (cpu_kv_blocks_logged
// above 0) keeps it (Engine.CPUKVBlocks: the replay runs vLLM's
// OffloadingConnector with a host tier of as many blocks); OpenWith with
// IgnoreKVOffload replays it GPU-only, with a note saying so.
func Open(path string) ([]*Run, error) { return OpenWith(path, OpenOptions{}) }

// OpenOptions are the caveats a caller accepts explicitly.
type OpenOptions struct {
	// IgnoreKVOffload replays a run that configured a CPU KV-cache offload
	// tier with the GPU's KV cache only (Engine.CPUKVBlocks set to 0), with
	// a note naming the tier's size (validate --ignore-kv-offload; the
	// suite files' ignore_kv_offload).
	IgnoreKVOffload bool
}

// OpenWith is Open with options.
func OpenWith(path string, opt OpenOptions) ([]*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("realrun: %w", err)
	}
	if dir, ok := sim2RealDir(path, st.IsDir()); ok {
		return openSim2Real(dir, opt)
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
		rows, err := readPath(path, "", ReadStageRows)
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

// readPath opens path and reads it with read, naming the file by its
// path; a file that does not open is "realrun: " and the error, then why.
func readPath[T any](path, why string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("realrun: %w%s", err, why)
	}
	defer f.Close()
	return read(f, path)
}

// sim2RealDir reports whether path is a sim2real table: a directory with
// experiments.csv and runs_long.csv, or one of the two files beside the
// other.
func sim2RealDir(path string, isDir bool) (string, bool) {
	dir := path
	if !isDir {
		if b := filepath.Base(path); b != Sim2RealExperiments && b != Sim2RealLong {
			return "", false
		}
		dir = filepath.Dir(path)
	}
	for _, f := range []string{Sim2RealExperiments, Sim2RealLong} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.IsDir() {
			return "", false
		}
	}
	return dir, true
}

// openSim2Real reads a sim2real directory (ReadSim2Real) into Runs,
// dropping experiments' CPU KV offload tiers with opt.IgnoreKVOffload.
func openSim2Real(dir string, opt OpenOptions) ([]*Run, error) {
	ep, lp := filepath.Join(dir, Sim2RealExperiments), filepath.Join(dir, Sim2RealLong)
	ef, err := os.Open(ep)
	if err != nil {
		return nil, fmt.Errorf("realrun: %w", err)
	}
	defer ef.Close()
	lf, err := os.Open(lp)
	if err != nil {
		return nil, fmt.Errorf("realrun: %w", err)
	}
	defer lf.Close()
	rows, err := ReadSim2Real(ef, ep, lf, lp)
	if err != nil {
		return nil, err
	}
	var runs []*Run
	for i := range rows {
		row := &rows[i]
		r := sim2RealRun(row, lp)
		if n := row.CPUKVBlocks; n > 0 {
			if opt.IgnoreKVOffload {
				r.Engine.CPUKVBlocks = 0
				r.Notes = append(r.Notes, fmt.Sprintf("CPU offload tier of %d blocks configured, ignored: replayed with the GPU's KV cache only (--ignore-kv-offload)", n))
			} else {
				r.Notes = append(r.Notes, fmt.Sprintf("CPU offload tier of %d blocks (cpu_kv_blocks_logged): replayed with a host KV tier of as many blocks (vLLM's OffloadingConnector)", n))
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func openRequestsDir(dir string) (*Run, error) {
	root := dir
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "vllm", "requests.jsonl")); err2 != nil {
			return nil, fmt.Errorf("realrun: %s: no requests.jsonl here or under vllm/ (want a run directory)", dir)
		}
		dir = filepath.Join(dir, "vllm")
	}
	run := &Run{Path: root, Format: FormatRequests, Name: runName(root)}
	var err error
	if run.Engine, err = readPath(filepath.Join(dir, "meta.json"), " (a run needs its engine arguments)", ReadMeta); err != nil {
		return nil, err
	}
	run.Notes = append(run.Notes, run.Engine.Notes...)
	if run.Engine.GPU == "" {
		if run.Engine.GPU, err = clusterHardware(filepath.Join(root, "config.json")); err != nil {
			return nil, err
		}
	}
	if run.Requests, err = readPath(filepath.Join(dir, "requests.jsonl"), "", ReadRequests); err != nil {
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
