package models

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestBuiltin(t *testing.T) {
	c := Builtin()
	want := []string{
		"codellama-34b", "deepseek-v3", "gpt-oss-120b", "internlm-20b", "llama-2-70b", "llama-2-7b",
		"llama-3-70b", "llama-3-8b", "llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b",
		"llama-4-scout-17b-16e", "mistral-nemo-12b", "mixtral-8x22b", "mixtral-8x7b", "phi-2",
		"qwen-72b", "qwen2.5-72b", "qwen2.5-7b", "qwen3-14b", "qwen3-235b-a22b", "qwen3-30b-a3b",
		"qwen3-32b", "qwen3-8b", "yi-34b",
	}
	var got []string
	for _, m := range c.All() {
		got = append(got, m.Name)
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
		if !strings.Contains(m.Source, "https://huggingface.co/"+m.HFName+"/") || !strings.Contains(m.Source, "config.json") {
			t.Errorf("%s: source %q does not cite %s's config.json", m.Name, m.Source, m.HFName)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("All() = %v, want %v (sorted)", got, want)
	}
	if c.Len() != len(want) {
		t.Errorf("Len() = %d", c.Len())
	}
}

func TestBuiltinIsFresh(t *testing.T) {
	a, b := Builtin(), Builtin()
	if err := a.Add(&Model{Name: "extra", Layers: 1, Hidden: 8, Heads: 1, FFN: 8, Vocab: 8, MaxContext: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get("extra"); err == nil {
		t.Error("a model added to one Builtin() catalog shows in another")
	}
	// Get returns a copy: changing it leaves the catalog alone.
	m, _ := a.Get("llama-3.1-8b")
	m.Layers = 1
	if m2, _ := a.Get("llama-3.1-8b"); m2.Layers != 32 {
		t.Errorf("catalog changed through Get's result: layers %d", m2.Layers)
	}
}

// TestBuiltinParsedOnce checks the catalog Builtin copies from its one
// parse of builtin.toml: equal to a fresh parse, and each catalog's models
// its own (a change to one catalog's stored model, aliases included, does
// not reach the next Builtin()).
func TestBuiltinParsedOnce(t *testing.T) {
	var fresh Catalog
	if err := fresh.Load(bytes.NewReader(builtinTOML), "builtin.toml"); err != nil {
		t.Fatal(err)
	}
	a := Builtin()
	if !reflect.DeepEqual(a.models, fresh.models) {
		t.Fatal("Builtin() differs from a fresh parse of builtin.toml")
	}
	m := a.models["llama-3.1-8b"]
	if len(m.HFAliases) == 0 {
		t.Fatal("llama-3.1-8b has no hf_aliases to change")
	}
	m.Layers = 1
	m.HFAliases[0] = "changed"
	m.Inferred.Notes = append(m.Inferred.Notes, "changed")
	if !reflect.DeepEqual(Builtin().models, fresh.models) {
		t.Error("a change to one Builtin() catalog's model shows in the next")
	}
}

func TestGet(t *testing.T) {
	c := Builtin()
	for _, name := range []string{"llama-3.1-8b", "Llama-3.1-8B", " LLAMA-3.1-8B "} {
		if m, err := c.Get(name); err != nil || m.Name != "llama-3.1-8b" {
			t.Errorf("Get(%q) = %v, %v", name, m, err)
		}
	}
	_, err := c.Get("llama-4")
	want := `models: unknown model "llama-4" (known: codellama-34b, deepseek-v3, gpt-oss-120b, internlm-20b, llama-2-70b, llama-2-7b, llama-3-70b, llama-3-8b, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, llama-4-scout-17b-16e, mistral-nemo-12b, mixtral-8x22b, mixtral-8x7b, phi-2, qwen-72b, qwen2.5-72b, qwen2.5-7b, qwen3-14b, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, qwen3-8b, yi-34b)`
	if err == nil || err.Error() != want {
		t.Errorf("Get(llama-4) error\n got %v\nwant %s", err, want)
	}
	var empty Catalog
	if _, err := empty.Get("x"); err == nil || err.Error() != `models: unknown model "x" (known: none)` {
		t.Errorf("empty catalog: %v", err)
	}
	if m, err := c.ByHFName("meta-llama/llama-2-7b-HF"); err != nil || m.Name != "llama-2-7b" {
		t.Errorf("ByHFName = %v, %v", m, err)
	}
	for _, hf := range []string{"", "nobody/nothing"} {
		if _, err := c.ByHFName(hf); err == nil {
			t.Errorf("ByHFName(%q) succeeded", hf)
		}
	}
}

func TestAdd(t *testing.T) {
	var c Catalog // the zero value is usable
	m := &Model{Name: "tiny", Layers: 1, Hidden: 8, Heads: 2, FFN: 16, Vocab: 10, MaxContext: 64}
	if err := c.Add(m); err != nil {
		t.Fatal(err)
	}
	if m.KVHeads != 0 {
		t.Error("Add filled the caller's defaults; it should validate a copy")
	}
	if got, _ := c.Get("tiny"); got.KVHeads != 2 || got.HeadDim != 4 {
		t.Errorf("stored model lacks defaults: %+v", got)
	}
	if err := c.Add(m); err == nil || err.Error() != `models: model "tiny": field "name": duplicate: the catalog already has this model` {
		t.Errorf("duplicate Add: %v", err)
	}
	bad := *m
	bad.Name, bad.Heads = "bad", 0
	var fe *FieldError
	if err := c.Add(&bad); !errors.As(err, &fe) || fe.Field != "heads" {
		t.Errorf("invalid Add: %v", err)
	}
}

// valid is a complete, valid [[model]] table of 9 lines (header on line 1).
const valid = `[[model]]
name = "tiny"
layers = 2
hidden = 64
heads = 4
ffn = 128
vocab = 100
gated_mlp = true
max_context = 256
`

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown key", strings.Replace(valid, "ffn = 128", "fnn = 128", 1),
			`models: f.toml line 6: model "tiny": field "fnn": unknown key (known: name, hf_name, hf_aliases, source, layers,`},
		{"wrong type", strings.Replace(valid, "layers = 2", `layers = "2"`, 1),
			`models: f.toml line 3: model "tiny": field "layers": want an integer, got string`},
		{"float for int", strings.Replace(valid, "hidden = 64", "hidden = 64.0", 1),
			`models: f.toml line 4: model "tiny": field "hidden": want an integer, got float`},
		{"bool type", strings.Replace(valid, "gated_mlp = true", `gated_mlp = "yes"`, 1),
			`models: f.toml line 8: model "tiny": field "gated_mlp": want a boolean (true or false), got string`},
		{"missing field", strings.Replace(valid, "max_context = 256\n", "", 1),
			`models: f.toml line 1: model "tiny": field "max_context": missing`},
		{"negative value", strings.Replace(valid, "heads = 4", "heads = -4", 1),
			`models: f.toml line 5: model "tiny": field "heads": must be > 0, not -4`},
		{"validation default line", strings.Replace(valid, "ffn = 128\n", "", 1),
			`models: f.toml line 1: model "tiny": field "ffn": must be > 0 for a dense model (experts = 0)`},
		{"bad name", strings.Replace(valid, `"tiny"`, `"Tiny Model"`, 1),
			`models: f.toml line 2: model "Tiny Model": field "name": "Tiny Model": use lower-case letters`},
		{"syntax error", strings.Replace(valid, "vocab = 100", "vocab = ", 1),
			`models: f.toml line 7: expected value but found '\n' instead`},
		{"duplicate key", valid + "layers = 3\n",
			`models: f.toml line 10: Key 'model.layers' has already been defined.`},
		{"duplicate name", valid + "\n" + valid,
			`models: f.toml line 12: model "tiny": field "name": duplicate of the model at line 2`},
		{"second table", valid + "\n" + strings.Replace(strings.Replace(valid, "tiny", "tiny2", 1), "vocab = 100", "vocab = 0", 1),
			`models: f.toml line 17: model "tiny2": field "vocab": must be > 0, not 0`},
		{"sub-table", valid + "[model.extra]\na = 1\n",
			`models: f.toml line 10: model "tiny": field "extra": unknown key`},
		{"top-level key", "version = 1\n" + valid,
			`models: f.toml line 1: field "version": unknown key: a models file holds [[model]] tables only`},
		{"other table", valid + "[[models]]\nname = 'x'\n",
			`models: f.toml line 10: field "models": unknown key`},
		{"model not tables", "model = 3\n",
			`models: f.toml line 1: field "model": want an array of tables ([[model]]), got integer`},
		{"no tables", "# nothing\n",
			`models: f.toml: no [[model]] tables`},
		{"inline tables", `model = [{name = "x", layers = 1.5}]` + "\n",
			`models: f.toml line 1: model "x": field "layers": want an integer, got float`},
		{"multi-line string", strings.Replace(valid, `name = "tiny"`, "name = \"tiny\"\nsource = \"\"\"\nheads = 1\n\"\"\"", 1),
			`models: f.toml line 8: model "tiny": field "heads": must be > 0, not -4`},
	}
	// The multi-line-string case also changes heads, after the string.
	tests[len(tests)-1].doc = strings.Replace(tests[len(tests)-1].doc, "heads = 4", "heads = -4", 1)
	for _, tc := range tests {
		c := Builtin()
		n := c.Len()
		err := c.Load(strings.NewReader(tc.doc), "f.toml")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %s...", tc.name, err, tc.want)
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %T is not a *FieldError", tc.name, err)
		}
		if c.Len() != n {
			t.Errorf("%s: catalog changed on error (%d → %d models)", tc.name, n, c.Len())
		}
	}
}

func TestLoadAllOrNothing(t *testing.T) {
	c := Builtin()
	n := c.Len()
	// The first model is new and valid, the second clashes with the catalog.
	doc := valid + "\n" + strings.Replace(valid, `"tiny"`, `"llama-2-7b"`, 1)
	err := c.Load(strings.NewReader(doc), "f.toml")
	if err == nil || err.Error() != `models: f.toml line 12: model "llama-2-7b": field "name": duplicate: the catalog already has this model` {
		t.Errorf("got %v", err)
	}
	if c.Len() != n {
		t.Errorf("partial load: %d models, want %d", c.Len(), n)
	}
	if err := c.Load(strings.NewReader(valid), "f.toml"); err != nil || c.Len() != n+1 {
		t.Errorf("valid load: %v, %d models", err, c.Len())
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	moe := strings.Replace(valid, "ffn = 128", "experts = 8\ntop_k = 2\nexpert_ffn = 32\nnorm = \"layernorm\"", 1)
	if err := os.WriteFile(good, []byte(moe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(valid, "heads = 4", "heads = 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var c Catalog
	if err := c.LoadFile(good); err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Get("tiny"); !m.IsMoE() || m.TopK != 2 || m.Norm != NormLayer {
		t.Errorf("loaded %+v", m)
	}
	err := c.LoadFile(bad)
	if want := "models: " + bad + ` line 1: model "tiny": field "head_dim": not set, and heads 3 does not divide hidden 64`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
	if err := c.LoadFile(filepath.Join(dir, "missing.toml")); err == nil || !strings.HasPrefix(err.Error(), "models: open ") {
		t.Errorf("missing file: %v", err)
	}
}

// Every Model field has a TOML key the loader can set.
func TestModelKeys(t *testing.T) {
	if len(modelKeys) != 30 {
		t.Errorf("%d TOML keys, the loader and this test know 30", len(modelKeys))
	}
	// A table that sets every key loads and round-trips each value.
	doc := `[[model]]
name = "all"
hf_name = "org/all"
hf_aliases = ["org/all-instruct", "org/all-chat"]
source = "here"
layers = 4
hidden = 64
heads = 4
kv_heads = 2
head_dim = 32
ffn = 8
vocab = 100
experts = 4
top_k = 1
expert_ffn = 16
shared_experts = 1
dense_layers = 1
qk_norm = true
q_lora_rank = 8
kv_lora_rank = 16
rope_head_dim = 8
v_head_dim = 16
gated_mlp = false
tied_embeddings = true
max_context = 512
qkv_bias = false
bias = true
norm = "layernorm"
parallel_block = true
sliding_window = 64
sliding_layers = 2
`
	var c Catalog
	if err := c.Load(strings.NewReader(doc), "all.toml"); err != nil {
		t.Fatal(err)
	}
	m, _ := c.Get("all")
	want := Model{Name: "all", HFName: "org/all", HFAliases: []string{"org/all-instruct", "org/all-chat"},
		Source: "here", Layers: 4, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 8, Vocab: 100,
		Experts: 4, TopK: 1, ExpertFFN: 16, SharedExperts: 1, DenseLayers: 1, QKNorm: true,
		QLoRARank: 8, KVLoRARank: 16, RopeHeadDim: 8, VHeadDim: 16, TiedEmbeddings: true, MaxContext: 512,
		Bias: true, Norm: NormLayer, ParallelBlock: true, SlidingWindow: 64, SlidingLayers: 2}
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", *m, want)
	}
}

// vidurDir finds Vidur's compute profiles under the shared data directory.
func vidurDir(t *testing.T) string {
	for _, d := range []string{"../shared/data", "../../shared/data"} {
		p := filepath.Join(d, "vidur-profiling", "compute")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("vidur-profiling data not found")
	return ""
}

// The shapes recorded in Vidur's profiles (first row of each mlp.csv) match
// the catalog model with the same HuggingFace name. Vocabulary is not
// compared: Vidur's Llama-2 config class defaults it to 32768 for the
// Llama-2 and CodeLlama runs, where config.json says 32000.
func TestBuiltinMatchesVidurProfiles(t *testing.T) {
	root := vidurDir(t)
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", "mlp.csv"))
	if len(files) == 0 {
		t.Skip("no mlp.csv files")
	}
	c := Builtin()
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		parts := strings.Split(filepath.ToSlash(rel), "/") // gpu/org/model/mlp.csv
		hf := parts[1] + "/" + parts[2]
		m, err := c.ByHFName(hf)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r := csv.NewReader(bufio.NewReader(fh))
		header, err1 := r.Read()
		row, err2 := r.Read()
		fh.Close()
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", rel, err1, err2)
		}
		col := func(name string) string {
			i := slices.Index(header, name)
			if i < 0 {
				t.Fatalf("%s: no column %s", rel, name)
			}
			return row[i]
		}
		atoi := func(name string) int {
			n, err := strconv.Atoi(col(name))
			if err != nil {
				t.Fatalf("%s: %s: %v", rel, name, err)
			}
			return n
		}
		got := [4]int{m.Heads, m.KVHeads, m.Hidden, m.FFN}
		want := [4]int{atoi("n_head"), atoi("n_kv_head"), atoi("n_embd"), atoi("n_expanded_embd")}
		if got != want || strconv.FormatBool(m.GatedMLP) != strings.ToLower(col("use_gated_mlp")) {
			t.Errorf("%s: catalog %s heads/kv/hidden/ffn %v gated %v; profile %v gated %s",
				rel, m.Name, got, m.GatedMLP, want, col("use_gated_mlp"))
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(builtinTOML)
	f.Add([]byte(valid))
	f.Add([]byte(valid + "[model.x]\ny = 1\n"))
	f.Add([]byte(`model = [{name = "x", layers = 1}]`))
	f.Add([]byte("[[model]]\nname = \"m\"\nsource = '''\n[[model]]\n'''\n"))
	f.Add([]byte("[[ model ]]\n\"name\" = 'q'\nlayers = 9223372036854775807\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Catalog
		err := c.Load(bytes.NewReader(data), "fuzz.toml")
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "models: fuzz.toml") {
				t.Fatalf("error %T %q: want a *FieldError naming the file", err, err)
			}
			if c.Len() != 0 {
				t.Fatal("models added despite an error")
			}
			return
		}
		b := prefill(17, 5)
		b.Decodes, b.DecodeCtx = 3, 40
		for _, m := range c.All() {
			if err := m.Validate(); err != nil {
				t.Fatalf("loaded model fails Validate: %v", err)
			}
			if p := m.Params(); !(p > 0) {
				t.Fatalf("%s: Params %v", m.Name, p)
			}
			var dst [NumOpKinds]Op
			if ops := m.Ops(b, Parallel{TP: 1}, dst[:0]); len(ops) == 0 {
				t.Fatalf("%s: no ops", m.Name)
			}
		}
	})
}
