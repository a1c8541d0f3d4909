package datasets

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var sharedData = filepath.Join("..", "..", "shared", "data")

func TestManifest(t *testing.T) {
	ds, err := parseManifest(manifestTOML)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"azure-llm-2023", "mooncake-fast25", "burstgpt", "sharegpt", "sharegpt-lengths", "arxiv-summarization", "vidur-profiling", "llmservingsim"}
	if got := strings.Join(Names(), " "); got != strings.Join(want, " ") {
		t.Fatalf("names %s, want %s", got, strings.Join(want, " "))
	}
	for _, d := range ds {
		if d.License == "" || d.Source == "" || len(d.Files) == 0 {
			t.Errorf("%s: licence, source and files are required", d.Name)
		}
	}
}

// Every checksum taken from a shared copy is that copy's: same size, same
// SHA-256.
func TestManifestMatchesSharedCopies(t *testing.T) {
	if _, err := os.Stat(sharedData); err != nil {
		t.Skipf("%s not here: shared-copy checksums not rechecked", sharedData)
	}
	n := 0
	for _, d := range All() {
		for _, f := range d.Files {
			if f.Checksum != SharedCopy {
				continue
			}
			p := filepath.Join(sharedData, filepath.FromSlash(d.Shared), filepath.FromSlash(f.Path))
			r, err := os.Open(p)
			if err != nil {
				t.Errorf("%s: %v", d.Name, err)
				continue
			}
			h := sha256.New()
			size, _ := io.Copy(h, r)
			r.Close()
			if got := hex.EncodeToString(h.Sum(nil)); size != f.Size || got != f.SHA256 {
				t.Errorf("%s: %d bytes sha256 %s, manifest %d %s", p, size, got, f.Size, f.SHA256)
			}
			n++
		}
	}
	// 2 Azure + 2 Mooncake + 1 ShareGPT lengths + 1 arXiv + 23 Vidur + 54 LLMServingSim (59 less 5 edited meta.yaml)
	if n != 83 {
		t.Errorf("%d shared-copy entries, want 83", n)
	}
}

func TestParseManifestErrors(t *testing.T) {
	head := "[[dataset]]\nname = \"a\"\n[[dataset.file]]\npath = \"f\"\nurl = \"https://x/f\"\n"
	cases := []struct{ name, text, want string }{
		{"unknown field", head + "checksum = \"unknown\"\ncolour = 1\n", `unknown field "dataset.file.colour"`},
		{"bad checksum kind", head + "checksum = \"trust-me\"\n", `checksum "trust-me"`},
		{"verified without sha", head + "checksum = \"shared-copy\"\nsize = 3\n", "needs sha256"},
		{"unknown with sha", head + "checksum = \"unknown\"\nsha256 = \"ab\"\n", "sha256 given"},
		{"path leaving the folder", strings.Replace(head, `"f"`, `"../f"`, 1) + "checksum = \"unknown\"\n", "relative and clean"},
		{"not http", strings.Replace(head, "https://x/f", "file:///etc/passwd", 1) + "checksum = \"unknown\"\n", "not http(s)"},
		{"repeated name", "[[dataset]]\nname = \"a\"\n[[dataset]]\nname = \"a\"\n", "repeated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseManifest(c.text)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "datasets: manifest.toml") {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestGetUnknownListsNames(t *testing.T) {
	_, err := Get("bogus")
	if err == nil || !strings.Contains(err.Error(), `unknown data set "bogus" (known: azure-llm-2023, mooncake-fast25,`) {
		t.Fatalf("error %v", err)
	}
}

func TestLookup(t *testing.T) {
	cache, shared := t.TempDir(), t.TempDir()
	write := func(p string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	// in the cache: Mooncake's conversation trace; in the shared copy: the
	// same plus the synthetic one, and Vidur's folder
	write(filepath.Join(cache, "mooncake-fast25", "conversation_trace.jsonl"))
	write(filepath.Join(shared, "traces", "mooncake-fast25", "conversation_trace.jsonl"))
	write(filepath.Join(shared, "traces", "mooncake-fast25", "synthetic_trace.jsonl"))
	write(filepath.Join(shared, "vidur-profiling", "compute", "h100", "x.csv"))
	write(filepath.Join(shared, "traces", "sharegpt", "sharegpt_8k_filtered_stats_llama2_tokenizer.csv"))
	existing := filepath.Join(cache, "plain.csv")
	write(existing)
	cases := []struct {
		ref, want string // want: the path, relative to cache or shared ("C/…", "S/…"), or the ref itself
		ok        bool
		err       string
	}{
		{ref: existing, want: existing},
		{ref: "some/file.csv", want: "some/file.csv"},
		{ref: "nodataset:conv", want: "nodataset:conv"},
		{ref: "mooncake-fast25:conversation", want: "C/mooncake-fast25/conversation_trace.jsonl", ok: true}, // the cache first
		{ref: "mooncake-fast25:synthetic", want: "S/traces/mooncake-fast25/synthetic_trace.jsonl", ok: true},
		{ref: "mooncake-fast25:synthetic_trace.jsonl", want: "S/traces/mooncake-fast25/synthetic_trace.jsonl", ok: true},
		{ref: "vidur-profiling", want: "S/vidur-profiling", ok: true},
		{ref: "vidur-profiling:compute/h100", want: "S/vidur-profiling/compute/h100", ok: true},
		{ref: "sharegpt-lengths", want: "S/traces/sharegpt/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", ok: true}, // the only file
		{ref: "mooncake-fast25:toolagent", ok: true, err: "not found at " + filepath.Join(cache, "mooncake-fast25", "toolagent_trace.jsonl")},
		{ref: "burstgpt:1", ok: true, err: "run `servesim data fetch burstgpt`"},
		{ref: "mooncake-fast25:bogus", ok: true, err: `no file, folder or alias "bogus" (aliases: conversation, synthetic, toolagent;`},
		{ref: "vidur-profiling:../../etc", ok: true, err: "no file, folder or alias"},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			got, ok, err := lookup(c.ref, cache, []string{shared})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "datasets: "+c.ref+": ") {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if r, found := strings.CutPrefix(want, "C/"); found {
				want = filepath.Join(cache, r)
			} else if r, found := strings.CutPrefix(want, "S/"); found {
				want = filepath.Join(shared, r)
			}
			if got != want || ok != c.ok {
				t.Fatalf("got %s %v, want %s %v", got, ok, want, c.ok)
			}
		})
	}
}

func TestDirFromEnv(t *testing.T) {
	t.Setenv(EnvDir, "/tmp/x")
	if d, err := Dir(); err != nil || d != "/tmp/x" {
		t.Fatalf("Dir() = %s, %v", d, err)
	}
}
