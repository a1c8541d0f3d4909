package sweep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments/internal/parallel"
	"github.com/servesim/servesim/experiments/scenario"
)

// PointFile is what a finished point leaves in DIR/points/KEY.json, and
// what results.csv and results.json are assembled from: a sweep stopped
// midway keeps its finished points, and a rerun computes only the others.
type PointFile struct {
	Index   int                  `json:"index"`
	Key     string               `json:"key"`
	Axes    []string             `json:"axes"` // axis values, formatted
	Seed    uint64               `json:"seed"`
	Metrics map[string]float64   `json:"metrics"`
	Summary scenario.SummaryFile `json:"summary"`
}

// Key identifies a point by its resolved scenario and what it read besides
// (Plan.Inputs: model, GPU and kernel-profile definitions, a trace's bytes):
// a hash of the scenario's TOML form and the inputs' digest.
func (p Point) Key() string {
	if p.key != "" {
		return p.key
	}
	return p.computeKey()
}

func (p Point) computeKey() string {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(p.Plan.Scenario); err != nil {
		panic("sweep: encoding a resolved scenario: " + err.Error())
	}
	buf.WriteString("\ninputs " + p.Plan.Inputs)
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:8])
}

// PointFileOf turns a finished point into its file.
func PointFileOf(r PointResult) PointFile {
	pf := PointFile{Index: r.Point.Index, Key: r.Point.Key(), Seed: r.Point.Seed, Metrics: map[string]float64{}, Summary: r.Report.SummaryJSON()}
	pf.Axes = append(pf.Axes, r.Point.Labels...)
	for _, c := range Columns {
		pf.Metrics[c.Name] = c.Get(r.Report)
	}
	return pf
}

// DirOptions configure RunSweepDir.
type DirOptions struct {
	Workers     int
	Shard, Of   int  // run only points with index % Of == Shard (Of ≤ 1: all)
	KeepRecords bool // also write each point's requests.csv and steps.csv under DIR/points/KEY/
	// Progress, when set, is told after each point: points done (run or
	// found) and the total of this shard.
	Progress func(done, total int)
	// Context, when set, stops the sweep when cancelled: no new point
	// starts, the points in flight stop (RunContext) and leave no
	// temporaries; the finished points keep their files, so a rerun
	// computes only the rest.
	Context context.Context
}

// RunSweepDir runs the points of a shard that have no file in dir yet,
// writing each point's file atomically as it finishes. It returns how many
// points it ran and how many it found already done.
func RunSweepDir(pts []Point, dir string, o DirOptions) (ran, found int, err error) {
	_, ran, found, err = RunSweepDirResults(pts, dir, o)
	return ran, found, err
}

// RunSweepDirResults is RunSweepDir that also returns the shard's point
// files in point order, what Collect(pts, dir) would then read back: a point
// found is its file as read, a point run is decoded from the bytes written
// for it (on the worker that ran it), so nothing is read twice. A file
// under a point's name that holds another key is not that point's result:
// the point runs again and its file is replaced.
func RunSweepDirResults(pts []Point, dir string, o DirOptions) (pfs []PointFile, ran, found int, err error) {
	if o.Of <= 1 {
		o.Shard, o.Of = 0, 1
	}
	if o.Shard < 0 || o.Shard >= o.Of {
		return nil, 0, 0, fmt.Errorf("sweep: shard %d/%d: want 0 ≤ i < n", o.Shard, o.Of)
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	pdir := filepath.Join(dir, "points")
	if err := scenario.MkdirAll(pdir); err != nil {
		return nil, 0, 0, err
	}
	start := time.Now()
	for _, d := range []string{dir, pdir} {
		if _, err := scenario.SweepStale(d, start); err != nil {
			return nil, 0, 0, err
		}
	}
	var todo []int // indices into pfs of the points to run
	mine := []Point{}
	for _, p := range pts {
		if p.Index%o.Of != o.Shard {
			continue
		}
		if pf, err := readPointFile(filepath.Join(pdir, p.Key()+".json")); err == nil && pf.Key == p.Key() {
			found++
			pf.Index = p.Index
			pfs = append(pfs, pf)
		} else {
			todo = append(todo, len(pfs))
			pfs = append(pfs, PointFile{})
		}
		mine = append(mine, p)
	}
	if o.Progress != nil {
		o.Progress(found, len(mine))
	}
	// On as many workers as cores every core runs a point: a point's run
	// then sorts its samples on its own goroutine only (RunOptions.Crowded).
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	crowded := min(workers, len(todo)) >= runtime.GOMAXPROCS(0)
	var (
		mu       sync.Mutex
		firstErr error
	)
	parallel.Run(len(todo), o.Workers, func(i int) {
		var err error
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("sweep: interrupted (%w)", err)
		} else {
			// Each worker writes only its own slot of pfs.
			err = runPoint(ctx, mine[todo[i]], pdir, scenario.RunOptions{Crowded: crowded}, o.KeepRecords, &pfs[todo[i]])
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			ran++
		}
	}, func(done, _ int) {
		if o.Progress != nil {
			o.Progress(found+done, len(mine))
		}
	})
	if firstErr != nil {
		return nil, ran, found, firstErr
	}
	sort.Slice(pfs, func(i, j int) bool { return pfs[i].Index < pfs[j].Index })
	return pfs, ran, found, nil
}

// runPoint runs p, writes its file and sets *pf to the file's contents as
// Collect would read them.
func runPoint(ctx context.Context, p Point, pdir string, ro scenario.RunOptions, keep bool, pf *PointFile) error {
	if keep {
		ro.Out = filepath.Join(pdir, p.Key())
	}
	rep, err := scenario.RunWith(ctx, p.Plan, ro)
	if err != nil {
		return fmt.Errorf("sweep: point %d: %w", p.Index, err)
	}
	js, err := json.MarshalIndent(PointFileOf(PointResult{Point: p, Report: rep}), "", " ")
	if err != nil {
		return fmt.Errorf("sweep: point %d: %w", p.Index, err)
	}
	js = append(js, '\n')
	path := filepath.Join(pdir, p.Key()+".json")
	if err := json.Unmarshal(js, pf); err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	pf.Index = p.Index
	return scenario.WriteFileAtomic(path, js)
}

func readPointFile(path string) (PointFile, error) {
	var pf PointFile
	data, err := os.ReadFile(path)
	if err != nil {
		return pf, err
	}
	if err := json.Unmarshal(data, &pf); err != nil {
		return pf, fmt.Errorf("sweep: %s: %w", path, err)
	}
	return pf, nil
}

// Collect gathers the point files of pts from dirs (a sweep's directory, or
// its shards' directories) in point order. A point missing from every dir is
// an error naming how many are missing and the first few.
func Collect(pts []Point, dirs ...string) ([]PointFile, error) {
	have := map[string]PointFile{}
	for _, d := range dirs {
		if st, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sweep: results directory %s does not exist", d)
		} else if err != nil {
			return nil, fmt.Errorf("sweep: results directory %s: %w", d, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("sweep: results directory %s is not a directory", d)
		}
		if _, err := os.Stat(filepath.Join(d, "points")); err != nil {
			return nil, fmt.Errorf("sweep: results directory %s has no points/ folder: not a sweep's output (servesim sweep FILE -o DIR)", d)
		}
		err := filepath.WalkDir(filepath.Join(d, "points"), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() || !strings.HasSuffix(path, ".json") {
				return nil
			}
			pf, err := readPointFile(path)
			if err != nil {
				return err
			}
			have[pf.Key] = pf
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sweep: reading %s: %w", d, err)
		}
	}
	out := make([]PointFile, 0, len(pts))
	var missing []int
	for _, p := range pts {
		pf, ok := have[p.Key()]
		if !ok {
			missing = append(missing, p.Index)
			continue
		}
		pf.Index = p.Index
		out = append(out, pf)
	}
	if len(missing) > 0 {
		show := missing[:min(len(missing), 10)]
		return out, fmt.Errorf("sweep: %d of %d points have no result in %s (first: %v): run the missing shards, or rerun the sweep to compute them",
			len(missing), len(pts), strings.Join(dirs, ", "), show)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// WriteResults writes dir/results.csv and dir/results.json from the
// collected point files, each atomically.
func WriteResults(dir string, axes []Axis, pfs []PointFile) error {
	csv, err := ResultsCSV(axes, pfs)
	if err != nil {
		return err
	}
	return WriteResultsFiles(dir, axes, pfs, csv)
}

// ResultsCSV is what WriteResults writes to results.csv.
func ResultsCSV(axes []Axis, pfs []PointFile) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, axes, pfs); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteResultsFiles writes dir/results.csv (csv, from ResultsCSV) and
// dir/results.json, each atomically: WriteResults for a caller that has the
// CSV already.
func WriteResultsFiles(dir string, axes []Axis, pfs []PointFile, csv []byte) error {
	if err := scenario.WriteFileAtomic(filepath.Join(dir, "results.csv"), csv); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		Axes   []Axis      `json:"axes"`
		Points []PointFile `json:"points"`
	}{axes, pfs}, "", " ")
	if err != nil {
		return fmt.Errorf("sweep: results.json: %w", err)
	}
	return scenario.WriteFileAtomic(filepath.Join(dir, "results.json"), append(js, '\n'))
}

// ParseShard reads "i/n".
func ParseShard(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("sweep: shard %q: want i/n with 0 ≤ i < n", s)
	}
	return i, n, nil
}
