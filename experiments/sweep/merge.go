package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
)

// ShardHeader says which sweep and which shard a shard's results file
// holds, so that files gathered from anywhere can be checked to be one
// sweep's shards, each once, with none missing.
type ShardHeader struct {
	Sweep  string `json:"sweep"`  // the sweep's name
	Digest string `json:"digest"` // Digest of its axes and point keys
	Points int    `json:"points"` // points in the whole sweep
	Shard  int    `json:"shard"`  // this shard's index, 0 ≤ Shard < Shards
	Shards int    `json:"shards"`
}

// ShardFile is a shard's results file: its header and its points (those
// with index % Shards == Shard), in point order.
type ShardFile struct {
	Shard  ShardHeader `json:"shard"`
	Axes   []Axis      `json:"axes"`
	Points []PointFile `json:"points"`
}

// ShardFileName is the name of shard i of n's results file in its output
// directory; shards sharing one directory each write their own.
func ShardFileName(i, n int) string { return fmt.Sprintf("results.shard-%d-of-%d.json", i, n) }

// WriteShardResults writes dir/ShardFileName(i, n) from the point files of
// shard i of n in dir/points: what `merge` gathers, wherever it is copied.
func WriteShardResults(dir, name string, axes []Axis, pts []Point, i, n int) error {
	var mine []Point
	for _, p := range pts {
		if p.Index%n == i {
			mine = append(mine, p)
		}
	}
	pfs, err := Collect(mine, dir)
	if err != nil {
		return err
	}
	sf := ShardFile{Shard: ShardHeader{Sweep: name, Digest: Digest(axes, pts), Points: len(pts), Shard: i, Shards: n}, Axes: axes, Points: pfs}
	js, err := json.MarshalIndent(sf, "", " ")
	if err != nil {
		return fmt.Errorf("sweep: %s: %w", ShardFileName(i, n), err)
	}
	return scenario.WriteFileAtomic(filepath.Join(dir, ShardFileName(i, n)), append(js, '\n'))
}

// FindShardFiles lists the shard results files under paths: a directory
// is searched recursively for files named like ShardFileName (a points/
// folder is skipped), a file is taken as given. The list is sorted.
func FindShardFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sweep: merge: %s does not exist", p)
		} else if err != nil {
			return nil, fmt.Errorf("sweep: merge: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if e.Name() == "points" && path != p {
					return filepath.SkipDir
				}
				return nil
			}
			if isShardFileName(e.Name()) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("sweep: merge: reading %s: %w", p, err)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

func isShardFileName(name string) bool {
	var i, n int
	_, err := fmt.Sscanf(name, "results.shard-%d-of-%d.json", &i, &n)
	return err == nil && name == ShardFileName(i, n)
}

// MergeShards reads shard results files and joins their points in point
// order. The files must be one sweep's (the same name, digest, point count,
// shard count and axes), every shard once: a file of another sweep, a
// shard given twice (two files, or one file twice under two paths) and a
// missing shard are errors naming the files. When want is not empty it is
// the digest of the experiment file the merge is for, and a shard of any
// other grid is an error.
func MergeShards(files []string, want string) ([]Axis, []PointFile, error) {
	if len(files) == 0 {
		return nil, nil, errors.New("sweep: merge: no shard results files (results.shard-I-of-N.json) found")
	}
	var (
		first  ShardFile
		byIdx  = map[int]string{}
		points []PointFile
	)
	for k, f := range files {
		sf, err := readShardFile(f)
		if err != nil {
			return nil, nil, err
		}
		h := sf.Shard
		if k == 0 {
			first = sf
			if want != "" && h.Digest != want {
				return nil, nil, fmt.Errorf("sweep: merge: %s is a shard of another grid (digest %s; the experiment file's is %s): the sweep's file, models, profiles or traces differ from the ones it ran with", f, h.Digest, want)
			}
		} else if d := headerDiff(first.Shard, h); d != "" {
			return nil, nil, fmt.Errorf("sweep: merge: %s and %s are not shards of one sweep: %s", files[0], f, d)
		} else if !axesEqual(first.Axes, sf.Axes) {
			return nil, nil, fmt.Errorf("sweep: merge: %s and %s are not shards of one sweep: their axes differ", files[0], f)
		}
		if prev, dup := byIdx[h.Shard]; dup {
			return nil, nil, fmt.Errorf("sweep: merge: shard %d of %d is given twice: %s and %s", h.Shard, h.Shards, prev, f)
		}
		byIdx[h.Shard] = f
		if got, exp := len(sf.Points), shardSize(h); got != exp {
			return nil, nil, fmt.Errorf("sweep: merge: %s: shard %d of %d holds %d points, want %d of the sweep's %d", f, h.Shard, h.Shards, got, exp, h.Points)
		}
		for _, p := range sf.Points {
			if p.Index%h.Shards != h.Shard || p.Index >= h.Points {
				return nil, nil, fmt.Errorf("sweep: merge: %s: point %d does not belong to shard %d of %d", f, p.Index, h.Shard, h.Shards)
			}
		}
		points = append(points, sf.Points...)
	}
	var missing []string
	for i := range first.Shard.Shards {
		if _, ok := byIdx[i]; !ok {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("sweep: merge: sweep %s: missing shards (of %d): %s; found %d files: %s", first.Shard.Sweep, first.Shard.Shards, strings.Join(missing, ", "), len(files), strings.Join(files, ", "))
	}
	sort.Slice(points, func(i, j int) bool { return points[i].Index < points[j].Index })
	for i, p := range points {
		if p.Index != i {
			return nil, nil, fmt.Errorf("sweep: merge: point %d is missing or given twice among %s", i, strings.Join(files, ", "))
		}
	}
	return first.Axes, points, nil
}

func readShardFile(path string) (ShardFile, error) {
	var sf ShardFile
	data, err := os.ReadFile(path) // as readPointFile: a sweep's own output, its size follows the grid
	if err != nil {
		return sf, fmt.Errorf("sweep: merge: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf); err != nil {
		return sf, fmt.Errorf("sweep: merge: %s: not a shard's results file (servesim sweep --shard i/n writes %s): %v", path, ShardFileName(0, 2), err)
	}
	h := sf.Shard
	if h.Shards < 1 || h.Shard < 0 || h.Shard >= h.Shards || h.Points < 0 || h.Digest == "" {
		return sf, fmt.Errorf("sweep: merge: %s: not a shard's results file: its shard header %+v is incomplete or out of range", path, h)
	}
	return sf, nil
}

// headerDiff names the first field in which two shards' headers disagree
// about the sweep ("" when they agree).
func headerDiff(a, b ShardHeader) string {
	switch {
	case a.Sweep != b.Sweep:
		return fmt.Sprintf("sweep %q against %q", a.Sweep, b.Sweep)
	case a.Digest != b.Digest:
		return fmt.Sprintf("digest %s against %s (run with different sweep files, models, profiles or traces)", a.Digest, b.Digest)
	case a.Points != b.Points:
		return fmt.Sprintf("%d points against %d", a.Points, b.Points)
	case a.Shards != b.Shards:
		return fmt.Sprintf("%d shards against %d", a.Shards, b.Shards)
	}
	return ""
}

// shardSize is how many of h.Points points have index % Shards == Shard.
func shardSize(h ShardHeader) int {
	if h.Shard >= h.Points {
		return 0
	}
	return (h.Points-1-h.Shard)/h.Shards + 1
}

func axesEqual(a, b []Axis) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
