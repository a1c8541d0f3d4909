package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// ShardFromEnv reads a shard "auto" or "auto/N" from a batch system's
// environment (getenv is os.Getenv, or a map in tests):
//
//   - a Slurm array job (sbatch --array=A-B[:S]): the shard is
//     (SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
//     of SLURM_ARRAY_TASK_COUNT (or (MAX − MIN)/STEP + 1 when COUNT is
//     not set; MIN defaults to 0 and STEP to 1), so --array=1-8 and
//     --array=0-7 both give shards 0…7 of 8;
//   - a Kubernetes Indexed Job: the shard is JOB_COMPLETION_INDEX, of N
//     from "auto/N" (the Job's completions: Kubernetes does not put the
//     count in the pod's environment).
//
// With "auto/N" under Slurm, N must equal the array's count. A missing
// variable, a value that is not an integer, an index out of range and an
// array with gaps (--array=1,3,5) are errors naming the variable; from
// names where the shard came from ("SLURM_ARRAY_TASK_ID=3").
func ShardFromEnv(spec string, getenv func(string) string) (i, n int, from string, err error) {
	rest, ok := strings.CutPrefix(spec, "auto")
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return 0, 0, "", fmt.Errorf("sweep: shard %q: want i/n, auto or auto/N", spec)
	}
	want := 0
	if rest != "" {
		if want, err = strconv.Atoi(rest[1:]); err != nil || want < 1 {
			return 0, 0, "", fmt.Errorf("sweep: shard %q: N in auto/N must be a whole number ≥ 1", spec)
		}
	}
	slurm, k8s := getenv("SLURM_ARRAY_TASK_ID"), getenv("JOB_COMPLETION_INDEX")
	switch {
	case slurm != "" && k8s != "":
		return 0, 0, "", fmt.Errorf("sweep: --shard %s: both SLURM_ARRAY_TASK_ID (%s) and JOB_COMPLETION_INDEX (%s) are set: give --shard i/n", spec, slurm, k8s)
	case slurm != "":
		i, n, err = slurmShard(getenv)
		if err != nil {
			return 0, 0, "", fmt.Errorf("sweep: --shard %s: %w", spec, err)
		}
		if want > 0 && want != n {
			return 0, 0, "", fmt.Errorf("sweep: --shard %s: the Slurm array has %d tasks, not %d", spec, n, want)
		}
		return i, n, "SLURM_ARRAY_TASK_ID=" + slurm, nil
	case k8s != "":
		if want == 0 {
			return 0, 0, "", fmt.Errorf("sweep: --shard auto: JOB_COMPLETION_INDEX=%s is set, but Kubernetes does not give the number of shards: give --shard auto/N with N the Job's completions", k8s)
		}
		i, err = envInt("JOB_COMPLETION_INDEX", k8s)
		if err == nil && i >= want {
			err = fmt.Errorf("JOB_COMPLETION_INDEX=%d: want 0 ≤ index < %d (the N of auto/N)", i, want)
		}
		if err != nil {
			return 0, 0, "", fmt.Errorf("sweep: --shard %s: %w", spec, err)
		}
		return i, want, "JOB_COMPLETION_INDEX=" + k8s, nil
	}
	return 0, 0, "", fmt.Errorf("sweep: --shard %s: neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set: run under one of them, or give --shard i/n", spec)
}

// slurmShard maps a Slurm array task to a shard index and count.
func slurmShard(getenv func(string) string) (i, n int, err error) {
	get := func(name string, def int) (int, error) {
		v := getenv(name)
		if v == "" {
			if def < 0 {
				return 0, fmt.Errorf("%s is not set", name)
			}
			return def, nil
		}
		return envInt(name, v)
	}
	id, err := get("SLURM_ARRAY_TASK_ID", -1)
	if err != nil {
		return 0, 0, err
	}
	lo, err := get("SLURM_ARRAY_TASK_MIN", 0)
	if err != nil {
		return 0, 0, err
	}
	step, err := get("SLURM_ARRAY_TASK_STEP", 1)
	if err != nil {
		return 0, 0, err
	}
	if step < 1 {
		return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_STEP=%d: want ≥ 1", step)
	}
	span := -1 // tasks from MIN to MAX at STEP, when MAX is set
	if v := getenv("SLURM_ARRAY_TASK_MAX"); v != "" {
		hi, err := envInt("SLURM_ARRAY_TASK_MAX", v)
		if err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_MAX=%d is below SLURM_ARRAY_TASK_MIN=%d", hi, lo)
		}
		span = (hi-lo)/step + 1
	}
	n = span
	if v := getenv("SLURM_ARRAY_TASK_COUNT"); v != "" {
		if n, err = envInt("SLURM_ARRAY_TASK_COUNT", v); err != nil {
			return 0, 0, err
		}
		if n < 1 {
			return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_COUNT=%d: want ≥ 1", n)
		}
		if span >= 0 && span != n {
			return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_COUNT=%d but MIN…MAX (%s…%s, step %d) spans %d tasks: an array with gaps (--array=1,3,5) cannot number its shards; use a range (--array=0-%d)",
				n, getenv("SLURM_ARRAY_TASK_MIN"), getenv("SLURM_ARRAY_TASK_MAX"), step, span, n-1)
		}
	}
	if n < 0 {
		return 0, 0, fmt.Errorf("neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is set: the number of shards is unknown")
	}
	if id < lo || (id-lo)%step != 0 || (id-lo)/step >= n {
		return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is not one of the array's %d tasks from %d at step %d", id, n, lo, step)
	}
	return (id - lo) / step, n, nil
}

func envInt(name, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a whole number ≥ 0", name, v)
	}
	return n, nil
}

// Digest identifies a sweep's grid: a hash of its axis columns and every
// point's key in order (Key hashes the resolved scenario and its inputs),
// so two runs of one experiment file on the same inputs share it, and a
// shard run after a model, profile or trace changed does not.
func Digest(axes []Axis, pts []Point) string {
	h := sha256.New()
	for _, a := range axes {
		fmt.Fprintf(h, "axis %q\n", a.Column())
	}
	for _, p := range pts {
		fmt.Fprintf(h, "point %d %s\n", p.Index, p.Key())
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
