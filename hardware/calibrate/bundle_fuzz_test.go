package calibrate

import (
	"math"
	"testing"
)

// checkBundleErr requires a bundle reader's error to start with the package
// name and name the file.
func checkBundleErr(t *testing.T, err error, file string) {
	t.Helper()
	checkReadErr(t, err, file)
}

func finitePositive(s float64) bool { return s > 0 && !math.IsInf(s, 0) && !math.IsNaN(s) }

func FuzzReadAttentionCSV(f *testing.F) {
	f.Add("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n0,0,1,16,11.328\n16,1024,4,64,40.5\n")
	f.Add("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n0,0,0,0,1\n")
	f.Add("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,0,1e400\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadAttentionCSV([]byte(src), "attention.csv")
		if err != nil {
			checkBundleErr(t, err, "attention.csv")
			return
		}
		for _, r := range rows {
			if !finitePositive(r.Seconds) || r.PrefillChunk == 0 && r.NDecode == 0 || r.PrefillChunk < 0 || r.KVPrefill < 0 || r.NDecode < 0 || r.KVDecode < 0 ||
				r.PrefillChunk == 0 && r.KVPrefill > 0 || r.NDecode == 0 && r.KVDecode > 0 || r.Line < 2 {
				t.Fatalf("row %+v", r)
			}
			b := AttnBatch(r)
			if b.Tokens() != r.PrefillChunk+r.NDecode || b.PrefillPairs < 0 {
				t.Fatalf("batch %+v of %+v", b, r)
			}
		}
	})
}

func FuzzReadDenseCSV(f *testing.F) {
	f.Add("layer,tokens,time_us\nqkv_proj,1,20.5\ngate_up_proj,2048,1152.8\n")
	f.Add("layer,tokens,time_us\n,1,2\n")
	f.Add("layer,tokens,time_us\nx,0,2\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadDenseCSV([]byte(src), "dense.csv")
		if err != nil {
			checkBundleErr(t, err, "dense.csv")
			return
		}
		for _, r := range rows {
			if r.Layer == "" || r.Tokens < 1 || !finitePositive(r.Seconds) {
				t.Fatalf("row %+v", r)
			}
		}
	})
}

func FuzzReadPerSeqCSV(f *testing.F) {
	f.Add("layer,sequences,time_us\nlm_head,1,714.0\nsampler,256,40\n")
	f.Add("layer,sequences,time_us\nlm_head,-1,714.0\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadPerSeqCSV([]byte(src), "per_sequence.csv")
		if err != nil {
			checkBundleErr(t, err, "per_sequence.csv")
			return
		}
		for _, r := range rows {
			if r.Layer == "" || r.Sequences < 1 || !finitePositive(r.Seconds) {
				t.Fatalf("row %+v", r)
			}
		}
	})
}

func FuzzReadMoECSV(f *testing.F) {
	f.Add("tokens,activated_experts,time_us\n1,8,60\n1024,256,653.1\n")
	f.Add("tokens,activated_experts,time_us\n1,0,60\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadMoECSV([]byte(src), "moe.csv")
		if err != nil {
			checkBundleErr(t, err, "moe.csv")
			return
		}
		for _, r := range rows {
			if r.Tokens < 1 || r.Experts < 1 || !finitePositive(r.Seconds) {
				t.Fatalf("row %+v", r)
			}
		}
	})
}

func FuzzParseBundleMeta(f *testing.F) {
	f.Add("gpu: NVIDIA H100 80GB HBM3\nmodel: Qwen/Qwen3.6-35B-A3B\ntp_degrees:\n- 1\n- 8\nengine_effective:\n  max_num_seqs: 512\n  hf_overrides:\n    num_attention_heads: 16\n")
	f.Add("gpu: 'a''b'\nmodel: \"m\"\ntp_degrees: [1, 2]\nlayer_mix:\n  full_attention_layers: 10\n")
	f.Add("gpu: x\nmodel: y\ntp_degrees:\n\t- 1\n")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseBundleMeta([]byte(src), "meta.yaml")
		if err != nil {
			checkBundleErr(t, err, "meta.yaml")
			return
		}
		if m.GPU == "" || m.Model == "" || len(m.TPDegrees) == 0 || len(m.TPDegrees) > 16 {
			t.Fatalf("meta %+v", m)
		}
		for _, tp := range m.TPDegrees {
			if tp < 1 || tp > 1024 {
				t.Fatalf("tp %d", tp)
			}
		}
	})
}
