package sweep

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShardFromEnv(t *testing.T) {
	cases := []struct {
		name, spec string
		env        map[string]string
		i, n       int
		err        string // a substring of the error; "" for none
	}{
		// --array=0-7: task 3 is shard 3 of 8.
		{"slurm 0-7", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_COUNT": "8"}, 3, 8, ""},
		// --array=1-8: task 1 is shard 0 of 8 (3 − 1 = 2 for task 3).
		{"slurm 1-8", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_COUNT": "8"}, 2, 8, ""},
		// --array=0-14:2: tasks 0, 2, …, 14; (14 − 0)/2 + 1 = 8 tasks; task 6 is shard 3.
		{"slurm step", "auto/8", map[string]string{"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "14", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "8"}, 3, 8, ""},
		// COUNT alone (MIN defaults to 0).
		{"slurm count only", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "5"}, 4, 5, ""},
		// MIN/MAX alone: 10…13 is 4 tasks.
		{"slurm min max", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "13", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "13"}, 3, 4, ""},
		{"slurm gaps", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "5", "SLURM_ARRAY_TASK_COUNT": "3"}, 0, 0, "SLURM_ARRAY_TASK_COUNT=3 but MIN…MAX"},
		{"slurm no count", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, 0, 0, "neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX"},
		{"slurm bad id", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "x3", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, 0, `SLURM_ARRAY_TASK_ID="x3"`},
		{"slurm bad count", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "0"}, 0, 0, "SLURM_ARRAY_TASK_COUNT=0"},
		{"slurm id past", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "8", "SLURM_ARRAY_TASK_COUNT": "8"}, 0, 0, "SLURM_ARRAY_TASK_ID=8 is not one of the array's 8 tasks"},
		{"slurm off step", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MAX": "6", "SLURM_ARRAY_TASK_STEP": "2"}, 0, 0, "SLURM_ARRAY_TASK_ID=3 is not one"},
		{"slurm max below min", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_MAX": "2"}, 0, 0, "SLURM_ARRAY_TASK_MAX=2 is below"},
		{"slurm N differs", "auto/4", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8"}, 0, 0, "has 8 tasks, not 4"},
		{"k8s", "auto/8", map[string]string{"JOB_COMPLETION_INDEX": "7"}, 7, 8, ""},
		{"k8s no N", "auto", map[string]string{"JOB_COMPLETION_INDEX": "2"}, 0, 0, "give --shard auto/N"},
		{"k8s index past N", "auto/8", map[string]string{"JOB_COMPLETION_INDEX": "8"}, 0, 0, "JOB_COMPLETION_INDEX=8: want 0 ≤ index < 8"},
		{"k8s bad index", "auto/8", map[string]string{"JOB_COMPLETION_INDEX": "-1"}, 0, 0, `JOB_COMPLETION_INDEX="-1"`},
		{"both", "auto/8", map[string]string{"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "1"}, 0, 0, "both SLURM_ARRAY_TASK_ID"},
		{"neither", "auto", nil, 0, 0, "neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX"},
		{"bad N", "auto/0", map[string]string{"JOB_COMPLETION_INDEX": "0"}, 0, 0, "N in auto/N"},
		{"bad spec", "automatic", nil, 0, 0, "want i/n, auto or auto/N"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, n, from, err := ShardFromEnv(tc.spec, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "sweep: ") {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if i != tc.i || n != tc.n || from == "" {
				t.Errorf("shard %d/%d from %q, want %d/%d", i, n, from, tc.i, tc.n)
			}
		})
	}
}

// runShards runs smallSweep unsharded and as n shards (each in its own
// directory, writing its shard file), returning the unsharded results.json
// and results.csv and the shards' directories.
func runShards(t *testing.T, n int) (sw *Sweep, pts []Point, want map[string][]byte, dirs []string) {
	t.Helper()
	sw, pts = loadPoints(t, smallSweep)
	full := t.TempDir()
	if _, _, err := RunSweepDir(pts, full, DirOptions{}); err != nil {
		t.Fatal(err)
	}
	pfs, err := Collect(pts, full)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteResults(full, sw.Axes, pfs); err != nil {
		t.Fatal(err)
	}
	want = map[string][]byte{}
	for _, f := range []string{"results.json", "results.csv"} {
		if want[f], err = os.ReadFile(filepath.Join(full, f)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		d := t.TempDir()
		if _, _, err := RunSweepDir(pts, d, DirOptions{Shard: i, Of: n, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		if err := WriteShardResults(d, sw.Name, sw.Axes, pts, i, n); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return sw, pts, want, dirs
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Shard files gathered into one tree in a shuffled order and layout merge
// into the unsharded run's results.json and results.csv, byte for byte;
// a missing shard, a shard given twice and a shard of another grid are
// errors naming the files.
func TestMergeShardsGathered(t *testing.T) {
	const n = 3 // 8 points: shards of 3, 3 and 2
	sw, pts, want, dirs := runShards(t, n)
	tree := t.TempDir()
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	var gathered []string
	for k, i := range order {
		dst := filepath.Join(tree, "node"+string(rune('a'+k)), "out", ShardFileName(i, n))
		copyFile(t, filepath.Join(dirs[i], ShardFileName(i, n)), dst)
		gathered = append(gathered, dst)
	}
	digest := Digest(sw.Axes, pts)
	files, err := FindShardFiles([]string{tree})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n {
		t.Fatalf("found %v, want %d files", files, n)
	}
	_, pfs, err := MergeShards(files, digest)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := WriteResults(out, sw.Axes, pfs); err != nil {
		t.Fatal(err)
	}
	for f, w := range want {
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("merged %s differs from the unsharded run's", f)
		}
	}

	// The same shard copied to two places.
	dup := filepath.Join(tree, "copy", ShardFileName(order[0], n))
	copyFile(t, gathered[0], dup)
	files, _ = FindShardFiles([]string{tree})
	if _, _, err := MergeShards(files, digest); err == nil || !strings.Contains(err.Error(), "given twice") || !strings.Contains(err.Error(), dup) {
		t.Errorf("duplicate shard: error %v, want one naming %s", err, dup)
	}
	// A shard missing: the error names the missing index and the files found.
	if _, _, err := MergeShards(gathered[1:], digest); err == nil || !strings.Contains(err.Error(), "missing shards (of 3): "+string(rune('0'+order[0]))) || !strings.Contains(err.Error(), gathered[1]) {
		t.Errorf("missing shard: error %v", err)
	}
	// Another grid's shard: the experiment file's digest differs, or two
	// files disagree.
	if _, _, err := MergeShards(gathered, "0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "another grid") {
		t.Errorf("another grid: error %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	data, _ := os.ReadFile(gathered[1])
	os.WriteFile(other, bytes.Replace(data, []byte(digest), []byte("0123456789abcdef"), 1), 0o644)
	if _, _, err := MergeShards([]string{gathered[0], other, gathered[2]}, ""); err == nil || !strings.Contains(err.Error(), "not shards of one sweep") || !strings.Contains(err.Error(), other) {
		t.Errorf("mixed sweeps: error %v", err)
	}
	// A file that is not a shard's (a full results.json).
	full := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(full, want["results.json"], 0o644)
	if _, _, err := MergeShards([]string{full}, ""); err == nil || !strings.Contains(err.Error(), "not a shard's results file") {
		t.Errorf("unsharded results.json: error %v", err)
	}
}
