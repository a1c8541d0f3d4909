package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// clusterSweep is a small experiment file (4 points of 120 requests) the
// cluster scripts' command lines run in the tests.
const clusterSweep = `
name = "cluster"
[base]
model = "llama-3.1-8b"
gpu = "h100"
[base.workload]
requests = 120
prompt = "lognormal:6.5,0.8"
output = "lognormal:5,0.6"
[[axis]]
field = "workload.rate"
values = [2, 4, 8, 16]
`

// shellVar is $NAME, ${NAME} or ${NAME:-default}.
var shellVar = regexp.MustCompile(`\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)|\$\((\w+)\)`)

// expandArgs expands the variables of a command line from env (also the
// Kubernetes form $(NAME)) and splits it into words, dropping double
// quotes: enough for the scripts' command lines, which quote no spaces.
func expandArgs(t *testing.T, line string, env map[string]string) []string {
	t.Helper()
	line = shellVar.ReplaceAllStringFunc(line, func(m string) string {
		s := shellVar.FindStringSubmatch(m)
		name := s[1] + s[3] + s[4]
		v, ok := env[name]
		if !ok && s[2] == "" {
			t.Fatalf("%q uses $%s, which the test's environment lacks", line, name)
		}
		if !ok {
			v = s[2]
		}
		return v
	})
	return strings.Fields(strings.ReplaceAll(line, `"`, ""))
}

// runServesim runs one servesim command line (its words after "servesim")
// with env set, failing the test unless it exits 0.
func runServesim(t *testing.T, args []string, env map[string]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	if code := exitCode(dispatch(args, &out, &out), &out); code != 0 {
		t.Fatalf("servesim %s: exit %d:\n%s", strings.Join(args, " "), code, out.String())
	}
}

// unshardedResults runs sweepFile unsharded and returns its results.json.
func unshardedResults(t *testing.T, sweepFile string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "full")
	runServesim(t, []string{"sweep", sweepFile, "-q", "-o", dir}, nil)
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docs/slurm-sweep.sbatch: its array and CPUs are directives, its defaults
// name an experiment file that loads, and its servesim line, run for every
// task of the array with the environment Slurm gives the task (on a small
// sweep), leaves shards that the merge line of its header joins into the
// unsharded run's results.json.
func TestSlurmSweepScript(t *testing.T) {
	text := readDoc(t, "slurm-sweep.sbatch")
	if !strings.HasPrefix(text, "#!/bin/bash\n") {
		t.Fatal("slurm-sweep.sbatch does not start with #!/bin/bash")
	}
	directive := func(name string) string {
		m := regexp.MustCompile(`(?m)^#SBATCH --` + name + `=(\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("slurm-sweep.sbatch has no #SBATCH --%s=", name)
		}
		return m[1]
	}
	var lo, hi int
	if _, err := fmt.Sscanf(directive("array"), "%d-%d", &lo, &hi); err != nil || hi < lo {
		t.Fatalf("--array=%s: want A-B", directive("array"))
	}
	cpus := directive("cpus-per-task")
	defaults := map[string]string{}
	var cmd, merge string
	for _, line := range strings.Split(text, "\n") {
		if m := regexp.MustCompile(`^(\w+)=\$\{(\w+):-(\S+)\}$`).FindStringSubmatch(line); m != nil && m[1] == m[2] {
			defaults[m[1]] = m[3]
		}
		if strings.HasPrefix(line, "servesim ") {
			if cmd != "" {
				t.Fatal("slurm-sweep.sbatch runs servesim twice")
			}
			cmd = strings.TrimPrefix(line, "servesim ")
		}
		if _, m, ok := strings.Cut(line, `--wrap "servesim `); ok && strings.HasPrefix(line, "#") {
			merge = strings.TrimSuffix(m, `"`)
		}
	}
	if cmd == "" || merge == "" {
		t.Fatalf("slurm-sweep.sbatch: sweep line %q, merge line %q", cmd, merge)
	}
	if _, err := os.Stat(filepath.Join("..", "..", defaults["SWEEP"])); err != nil {
		t.Fatalf("the default SWEEP: %v", err)
	}
	sweepFile := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(sweepFile, []byte(clusterSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for id := lo; id <= hi; id++ {
		env := map[string]string{
			"SWEEP": sweepFile, "OUT": out, "SLURM_CPUS_PER_TASK": cpus,
			"SLURM_ARRAY_TASK_ID": strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN": strconv.Itoa(lo),
			"SLURM_ARRAY_TASK_MAX": strconv.Itoa(hi), "SLURM_ARRAY_TASK_COUNT": strconv.Itoa(hi - lo + 1),
			"SLURM_ARRAY_TASK_STEP": "1",
		}
		runServesim(t, append(expandArgs(t, cmd, env), "-q"), env)
	}
	mergeArgs := expandArgs(t, merge, map[string]string{"SWEEP": sweepFile, "OUT": out})
	runServesim(t, append(mergeArgs, "-q"), nil)
	got, err := os.ReadFile(filepath.Join(out, "merged", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, unshardedResults(t, sweepFile)) {
		t.Error("the array's shards merged differ from the unsharded run")
	}
}

// docs/k8s-sweep-job.yaml: a structural check without a YAML parser (the
// command is a flow sequence, which is JSON; mounts and volumes are flow
// maps): an Indexed Job whose completions equal the N of --shard auto/N,
// whose experiment file and output directory lie on mounted volumes (the
// output on the PersistentVolumeClaim the file declares), and whose command,
// run for every completion index with the volumes mapped to directories
// (on a small sweep), leaves shards that the merge line of its header
// joins into the unsharded run's results.json.
func TestK8sSweepJob(t *testing.T) {
	text := readDoc(t, "k8s-sweep-job.yaml")
	docs := strings.Split(text, "\n---\n")
	var job, pvc string
	for _, d := range docs {
		switch {
		case strings.Contains(d, "\nkind: Job\n"):
			job = d
		case strings.Contains(d, "\nkind: PersistentVolumeClaim\n"):
			pvc = d
		}
	}
	if job == "" || pvc == "" {
		t.Fatalf("k8s-sweep-job.yaml: want a Job and a PersistentVolumeClaim, got %d documents", len(docs))
	}
	field := func(doc, key string) string {
		m := regexp.MustCompile(`(?m)^\s*` + key + `: (.+)$`).FindStringSubmatch(doc)
		if m == nil {
			t.Fatalf("k8s-sweep-job.yaml: no %s", key)
		}
		return strings.TrimSpace(m[1])
	}
	for key, want := range map[string]string{"apiVersion": "batch/v1", "completionMode": "Indexed", "restartPolicy": "Never"} {
		if got := field(job, key); got != want {
			t.Errorf("Job %s: %s, want %s", key, got, want)
		}
	}
	completions, err := strconv.Atoi(field(job, "completions"))
	if err != nil || completions < 1 {
		t.Fatalf("completions %q", field(job, "completions"))
	}
	var args []string
	if err := json.Unmarshal([]byte(field(job, "command")), &args); err != nil {
		t.Fatalf("command is not a flow sequence of strings: %v", err)
	}
	if len(args) < 2 || args[0] != "servesim" || args[1] != "sweep" {
		t.Fatalf("command %q: want servesim sweep …", args)
	}
	args = args[1:]
	shard, outDir, file := "", "", args[1]
	for i := range len(args) - 1 {
		switch args[i] {
		case "--shard":
			shard = args[i+1]
		case "-o", "--out":
			outDir = args[i+1]
		}
	}
	if shard != fmt.Sprintf("auto/%d", completions) {
		t.Errorf("--shard %s, want auto/%d (the Job's completions)", shard, completions)
	}
	kinds := map[string]string{} // volume name → its kind
	for _, m := range regexp.MustCompile(`- \{name: ([\w-]+), (\w+): \{(?:name|claimName): ([\w-]+)\}\}`).FindAllStringSubmatch(job, -1) {
		kinds[m[1]] = m[2]
		if m[2] == "persistentVolumeClaim" && m[3] != field(pvc, "name") {
			t.Errorf("volume %s claims %s; the file declares %s", m[1], m[3], field(pvc, "name"))
		}
	}
	mounts := map[string]string{} // mount path → volume kind
	for _, m := range regexp.MustCompile(`- \{name: ([\w-]+), mountPath: ([^,}]+)`).FindAllStringSubmatch(job, -1) {
		if kinds[m[1]] == "" {
			t.Errorf("volumeMount %s names no volume", m[1])
		}
		mounts[m[2]] = kinds[m[1]]
	}
	mountOf := func(p string) string {
		for mp := range mounts {
			if strings.HasPrefix(p, mp+"/") {
				return mp
			}
		}
		t.Fatalf("%s is on no mounted volume", p)
		return ""
	}
	if mounts[mountOf(outDir)] != "persistentVolumeClaim" || mounts[mountOf(file)] != "configMap" {
		t.Errorf("output %s on a %s, experiment file %s on a %s: want the claim and the ConfigMap", outDir, mounts[mountOf(outDir)], file, mounts[mountOf(file)])
	}
	// The volumes as directories: the ConfigMap holds the small sweep under
	// the file's name.
	local := map[string]string{}
	for mp := range mounts {
		local[mp] = t.TempDir()
	}
	sweepFile := filepath.Join(local[mountOf(file)], strings.TrimPrefix(file, mountOf(file)+"/"))
	if err := os.WriteFile(sweepFile, []byte(clusterSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	relocate := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = a
			for mp, dir := range local {
				if a == mp || strings.HasPrefix(a, mp+"/") {
					out[i] = dir + strings.TrimPrefix(a, mp)
				}
			}
		}
		return out
	}
	cmd := strings.Join(args, " ")
	for i := range completions {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		runServesim(t, append(relocate(expandArgs(t, cmd, env)), "-q"), env)
	}
	m := regexp.MustCompile(`(?m)^#\s+servesim (merge .+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("k8s-sweep-job.yaml: no merge line in its header")
	}
	mergeArgs := relocate(strings.Fields(m[1]))
	runServesim(t, append(mergeArgs, "-q"), nil)
	got, err := os.ReadFile(filepath.Join(mergeArgs[len(mergeArgs)-1], "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, unshardedResults(t, sweepFile)) {
		t.Error("the Job's shards merged differ from the unsharded run")
	}
}

// --shard auto outside a batch system, or with a bad value, exits 1 with an
// error naming the variable, before any point runs.
func TestSweepShardAutoErrors(t *testing.T) {
	sweepFile := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(sweepFile, []byte(clusterSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shard string
		env   map[string]string
		want  string
	}{
		{"auto", nil, "neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX"},
		{"auto", map[string]string{"SLURM_ARRAY_TASK_ID": "two", "SLURM_ARRAY_TASK_COUNT": "4"}, `SLURM_ARRAY_TASK_ID="two"`},
		{"auto", map[string]string{"JOB_COMPLETION_INDEX": "1"}, "give --shard auto/N"},
		{"auto/4", map[string]string{"JOB_COMPLETION_INDEX": "4"}, "JOB_COMPLETION_INDEX=4"},
	} {
		for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX"} {
			t.Setenv(k, tc.env[k])
		}
		out := filepath.Join(t.TempDir(), "out")
		var buf bytes.Buffer
		code := exitCode(dispatch([]string{"sweep", sweepFile, "--shard", tc.shard, "-o", out}, &buf, &buf), &buf)
		if code != exitBadInput || !strings.Contains(buf.String(), tc.want) {
			t.Errorf("--shard %s with %v: exit %d, output %q; want exit %d naming %q", tc.shard, tc.env, code, buf.String(), exitBadInput, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--shard %s with %v: %s was created", tc.shard, tc.env, out)
		}
	}
}
