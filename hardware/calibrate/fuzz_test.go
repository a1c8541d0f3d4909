package calibrate

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// checkReadErr requires a reader's error to be a *LineError naming the file.
func checkReadErr(t *testing.T, err error, file string) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %T %v is not a *LineError", err, err)
	}
	if le.File != file || !strings.HasPrefix(err.Error(), "calibrate: "+file) {
		t.Fatalf("error %q does not name %s", err, file)
	}
}

func FuzzReadVidurMLP(f *testing.F) {
	f.Add(mlpHeader + mlpRow("0.038", "1", "1") + mlpRow("0.589", "4096", "2"))
	f.Add(mlpHeader + mlpRow("1e-3", "8", "1"))
	f.Add(mlpHeader + "0.5,0.5\n")
	f.Add("num_tokens,num_tensor_parallel_workers\n1,1\n")
	f.Add("\"unterminated\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadVidurMLP(strings.NewReader(src), "mlp.csv")
		if err != nil {
			checkReadErr(t, err, "mlp.csv")
			return
		}
		m := mustModel(t, "llama-2-7b")
		for _, r := range rows {
			if r.Tokens < 1 || r.TP < 1 || r.Line < 2 {
				t.Fatalf("row %+v", r)
			}
			for _, s := range r.Seconds {
				if !math.IsNaN(s) && !(s > 0 && !math.IsInf(s, 0)) {
					t.Fatalf("time %v", s)
				}
			}
		}
		// Samples either build or fail with a line error (shape mismatch, TP).
		ss, err := VidurMLPSamples(rows, m, "h100", "mlp.csv")
		if err != nil {
			checkReadErr(t, err, "mlp.csv")
			return
		}
		for _, s := range ss {
			if !(s.Seconds > 0) || s.Op.Count != 1 {
				t.Fatalf("sample %+v", s)
			}
		}
	})
}

func FuzzReadVidurCollective(f *testing.F) {
	f.Add(collHeader + "0,0.01,0.037,0,8,2048,all_reduce,8,8\n")
	f.Add(collHeader + "0,0.01,0.037,0,8,2048,send_recv,8,8\n1,0.01,0.04,0,2,4096,all_reduce,2,8\n")
	f.Add(",time_stats.send_recv.median,num_workers,size,collective,devices_per_node\n0,0.1,2,1e9,send_recv,1\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadVidurCollective(strings.NewReader(src), "ar.csv")
		if err != nil {
			checkReadErr(t, err, "ar.csv")
			return
		}
		for _, s := range AllReduceSamples(rows, "h100", "ar.csv") {
			if s.TP < 2 || !(s.Op.CommBytes > 0) || !(s.Seconds > 0) {
				t.Fatalf("sample %+v", s)
			}
		}
	})
}

func FuzzReadVidurCPUOverheads(f *testing.F) {
	head := ",schedule_median,sampler_e2e_median,prepare_inputs_e2e_median,process_model_outputs_median,model_name,batch_size,tensor_parallel_degree,ray_comm_time_mean\n"
	f.Add(head + "0,0.2,0.3,0.52,0.1,m,8,1,0.2\n1,0.2,0.3,1.48,0.1,m,32,1,0.3\n")
	f.Add(head + "0,0.2,0.3,0.52,0.1,m,8,1,0.2\n1,0.2,0.3,1.48,0.1,m,8,1,0.3\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadVidurCPUOverheads(strings.NewReader(src), "cpu.csv")
		if err != nil {
			checkReadErr(t, err, "cpu.csv")
			return
		}
		fit, err := FitIterOverhead(rows, "cpu.csv")
		if err != nil {
			return
		}
		if math.IsNaN(fit.Fixed) || math.IsNaN(fit.PerRequest) {
			t.Fatalf("fit %+v", fit)
		}
	})
}

func FuzzReadNative(f *testing.F) {
	f.Add("gpu,op,model,tp,tokens,precision,flops,bytes,comm_bytes,time_us\nh100,qkv,llama-2-7b,1,16,,,,,41.5\n")
	f.Add("# c\ngpu,op,tp,comm_bytes,time_us\nh100,all_reduce,8,1048576,34\n")
	f.Add("gpu,op,tokens,flops,bytes,time_us\nh100,attn_prefill,512,1e12,1e9,800\n")
	f.Add("gpu,op,model,tp,tokens,precision,time_us\nh200,mlp_up,mixtral-8x7b,4,128,fp8,50\n")
	f.Fuzz(func(t *testing.T, src string) {
		ss, err := ReadNative(strings.NewReader(src), "n.csv", nil)
		if err != nil {
			checkReadErr(t, err, "n.csv")
			return
		}
		var buf bytes.Buffer
		if err := WriteNative(&buf, ss); err != nil {
			t.Fatal(err)
		}
		back, err := ReadNative(&buf, "rt.csv", nil)
		if err != nil {
			t.Fatalf("re-reading what WriteNative wrote: %v\n%s", err, buf.String())
		}
		if len(back) != len(ss) {
			t.Fatalf("%d samples back, want %d", len(back), len(ss))
		}
		for i := range ss {
			a, b := ss[i].Op, back[i].Op
			if a.Kind != b.Kind || a.FLOPs != b.FLOPs || a.Bytes != b.Bytes || a.CommBytes != b.CommBytes || a.Tokens != b.Tokens || a.Compute != b.Compute {
				t.Fatalf("sample %d: %+v became %+v", i, a, b)
			}
		}
	})
}

func FuzzParseProfile(f *testing.F) {
	f.Add(handProfile(mustGPU(f, "h100")).WriteTOML())
	if p, ok := Builtin("h200"); ok {
		f.Add(p.WriteTOML())
	}
	f.Add([]byte("format = 1\ngpu = \"h100\"\n[[op]]\nop = \"qkv\"\n[op.fit]\nbogus = 1\n"))
	f.Add([]byte("[[all_reduce]]\ntp = 2\n[[all_reduce]]\ntp = 1\n"))
	f.Add(moeProfile(f).WriteTOML())
	withTrees := waveProfile(mustGPU(f, "h100"))
	withTrees.GEMMTrees = tinyTrees()
	f.Add(withTrees.WriteTOML())
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data, "p.toml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "calibrate: p.toml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		// A valid profile writes and reads back to the same text.
		again, err := ParseProfile(p.WriteTOML(), "again.toml")
		if err != nil {
			t.Fatalf("re-reading a written profile: %v", err)
		}
		if !bytes.Equal(again.WriteTOML(), p.WriteTOML()) {
			t.Fatal("write → parse → write differs")
		}
	})
}
