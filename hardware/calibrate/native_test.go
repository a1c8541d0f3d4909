package calibrate

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func TestReadNative(t *testing.T) {
	src := `# a comment
gpu,op,model,tp,tokens,precision,flops,bytes,comm_bytes,time_us
h100,qkv,llama-2-7b,1,16,,,,,41.5
h100,mlp_up,meta-llama/Llama-2-7b-hf,2,4096,fp8,,,,700
# another comment
h100,norm,,1,32,,1000,524288,,4
h100,all_reduce,,8,,,,,1048576,34
`
	ss, err := ReadNative(strings.NewReader(src), "t.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 {
		t.Fatalf("%d samples", len(ss))
	}
	// qkv of Llama-2-7B at 16 tokens: FLOPs 2·16·4096·12288 = 1610612736, from the catalog.
	if s := ss[0]; s.Model != "llama-2-7b" || s.Op.Kind != models.OpQKV || s.Op.FLOPs != 2*16*4096*12288.0 ||
		math.Abs(s.Seconds-41.5e-6) > 1e-18 || s.Where != "t.csv line 3" || s.TP != 1 {
		t.Errorf("qkv row: %+v", s)
	}
	// An HF name resolves; FP8 weights make an FP8 GEMM: FLOPs 2·4096·4096·(2·11008/2) = 2·4096·4096·11008.
	if s := ss[1]; s.Model != "llama-2-7b" || s.Op.Compute != models.FP8 || s.TP != 2 || s.Op.FLOPs != 2*4096*4096*11008.0 {
		t.Errorf("mlp_up row: %+v", s)
	}
	if s := ss[2]; s.Model != "" || s.Op.FLOPs != 1000 || s.Op.Bytes != 524288 || s.Where != "t.csv line 6" {
		t.Errorf("explicit row: %+v", s)
	}
	if s := ss[3]; s.Op.Kind != models.OpAllReduce || s.TP != 8 || s.Op.CommBytes != 1<<20 {
		t.Errorf("all-reduce row: %+v", s)
	}
}

func TestReadNativeErrors(t *testing.T) {
	head := "gpu,op,model,tp,tokens,flops,bytes,comm_bytes,time_us\n"
	for _, c := range []struct{ name, src, want string }{
		{"unknown column", "gpu,op,time_us,speed\nh100,qkv,1,2\n", `calibrate: n.csv line 1: column "speed": unknown column`},
		{"missing time", "gpu,op,tokens\nh100,qkv,1\n", `calibrate: n.csv line 1: column "time_us": missing column`},
		{"unknown op", head + "h100,matmul,llama-2-7b,1,1,,,,5\n", `calibrate: n.csv line 2: column "op": unknown operator "matmul"`},
		{"unknown model", head + "h100,qkv,gpt-5,1,1,,,,5\n", `calibrate: n.csv line 2: column "model": "gpt-5" is neither`},
		{"no cost", head + "h100,qkv,,1,1,,,,5\n", `calibrate: n.csv line 2: column "model": a row needs a model or both flops and bytes`},
		{"no tokens", head + "h100,qkv,llama-2-7b,1,,,,,5\n", `calibrate: n.csv line 2: column "tokens": required for qkv`},
		{"bad tp", head + "h100,qkv,llama-2-7b,3,1,,,,5\n", `calibrate: n.csv line 2: column "tp"`},
		{"all-reduce at tp 1", head + "h100,all_reduce,,1,,,,1024,5\n", `calibrate: n.csv line 2: column "tp": an all_reduce needs tp >= 2`},
		{"all-reduce without bytes", head + "h100,all_reduce,,2,,,,,5\n", `calibrate: n.csv line 2: column "comm_bytes": required for all_reduce`},
		{"negative flops", head + "h100,qkv,,1,1,-1,5,,5\n", `calibrate: n.csv line 2: column "flops": want a finite number >= 0`},
		{"zero time", head + "h100,qkv,llama-2-7b,1,1,,,,0\n", `calibrate: n.csv line 2: column "time_us": must be finite and > 0`},
		{"attention from a model", head + "h100,attn_decode,llama-2-7b,1,1,,,,5\n", `calibrate: n.csv line 2: column "flops": attention rows need flops and bytes`},
		{"no work", head + "h100,add,,1,1,0,0,,5\n", `calibrate: n.csv line 2: column "bytes": an operator with no FLOPs and no bytes`},
		{"empty gpu", head + ",qkv,llama-2-7b,1,1,,,,5\n", `calibrate: n.csv line 2: column "gpu": empty`},
		{"only comments", "# nothing\n", "calibrate: n.csv: empty file"},
		{"header after comments", "# c\n# c\n" + head, "calibrate: n.csv: no data rows"},
		{"error line after comments", "# c\n" + head + "h100,qkv,llama-2-7b,1,1,,,,x\n", `calibrate: n.csv line 3: column "time_us": not a number`},
	} {
		if _, err := ReadNative(strings.NewReader(c.src), "n.csv", nil); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want prefix %q", c.name, err, c.want)
		}
	}
}

// WriteNative then ReadNative gives back the samples (up to Where, Name and
// the last bit of the seconds, which pass through microseconds).
func TestNativeRoundTrip(t *testing.T) {
	dir := vidurDir(t)
	tr, err := LoadVidur(dir, "a100", VidurOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every 50th sample keeps the test fast and still covers every operator and model.
	var ss []Sample
	for i := 0; i < len(tr.Samples); i += 50 {
		ss = append(ss, tr.Samples[i])
	}
	var buf bytes.Buffer
	if err := WriteNative(&buf, ss); err != nil {
		t.Fatal(err)
	}
	back, err := ReadNative(&buf, "rt.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ss) {
		t.Fatalf("%d samples back, want %d", len(back), len(ss))
	}
	for i := range ss {
		a, b := ss[i], back[i]
		a.Where, b.Where, a.Name, b.Name = "", "", "", ""
		if math.Abs(a.Seconds-b.Seconds) > 1e-15*a.Seconds {
			t.Fatalf("sample %d: wrote %g s, read %g s", i, a.Seconds, b.Seconds)
		}
		b.Seconds = a.Seconds
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("sample %d: wrote %+v, read %+v", i, a, b)
		}
	}
}
