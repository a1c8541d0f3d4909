package scenario

import (
	"strings"
	"testing"
)

func resolveText(t *testing.T, text string) (*Plan, error) {
	t.Helper()
	s, err := Parse(strings.NewReader(text), "s.toml")
	if err != nil {
		return nil, err
	}
	return s.Resolve()
}

// TestOffloadTiers: [offload] becomes per-GPU tiers. Llama-3.1-8B on H100
// (host_bw 64e9 B/s per direction) at TP 2: 100 GiB over 2 GPUs is
// 50 GiB = 53,687,091,200 B a GPU; the host link 64e9 × 256/280 =
// 58.514e9 B/s; disk 20 GiB → 10 GiB a GPU at 7.0/3.8 GB/s (defaults),
// written on eviction.
func TestOffloadTiers(t *testing.T) {
	head := "model = \"llama-3.1-8b\"\ngpu = \"h100\"\ntp = 2\n[workload]\nrequests = 10\nrate = 1\nprompt = \"constant:100\"\noutput = \"constant:10\"\n[batch]\nprefix_caching = true\n"
	p, err := resolveText(t, head+"[offload]\nbackend = \"lmcache\"\ncpu_gib = 100\ndisk_gib = 20\n")
	if err != nil {
		t.Fatal(err)
	}
	tiers := p.Serve.Instance.Tiers
	if len(tiers) != 2 {
		t.Fatalf("%d tiers, want 2", len(tiers))
	}
	host := 64e9 * 256 / 280
	if c := tiers[0]; c.Bytes != 50*GiB || c.ReadBW != host || c.WriteBW != host || c.OnEvict {
		t.Errorf("host tier %+v, want 50 GiB at %g B/s both ways", c, host)
	}
	if d := tiers[1]; d.Bytes != 10*GiB || d.ReadBW != 7e9 || d.WriteBW != 3.8e9 || !d.OnEvict {
		t.Errorf("disk tier %+v, want 10 GiB at 7e9/3.8e9 B/s, on eviction", d)
	}
	if p, err := resolveText(t, head+"[offload]\ncpu_gib = 0\n"); err != nil || p.Serve.Instance.Tiers != nil {
		t.Errorf("cpu_gib = 0: tiers %v, %v; want none", p.Serve.Instance.Tiers, err)
	}
	for _, c := range []struct{ body, wants string }{
		{"[offload]\ncpu_gib = 10\ndisk_gib = 5\n", "offloads to host memory only"},
		{"[offload]\nbackend = \"mooncake\"\ncpu_gib = 10\n", "want native"},
		{"[offload]\ncpu_gib = -1\n", "a finite number > 0"},
		{"[offload]\ncpu_gib = 10\nhost_link_efficiency = 1.5\n", "at most 1"},
		{"[offload]\nbackend = \"lmcache\"\ncpu_gib = 10\ndisk_gib = 5\ndisk_store = \"later\"\n", "want evict or through"},
	} {
		if _, err := resolveText(t, head+c.body); err == nil || !strings.Contains(err.Error(), c.wants) || !strings.Contains(err.Error(), "s.toml line") {
			t.Errorf("%q: error %v, want one naming the line and saying %q", c.body, err, c.wants)
		}
	}
	for _, e := range []string{"sglang", "trtllm"} {
		eng := strings.Replace(head, "[batch]\nprefix_caching = true\n", "[engine]\nname = \""+e+"\"\n", 1)
		if _, err := resolveText(t, eng+"[offload]\ncpu_gib = 10\n"); err == nil || !strings.Contains(err.Error(), "the "+e+" engine's own offload is not modelled") {
			t.Errorf("engine %s: %v, want the tier refused", e, err)
		}
	}
	noCache := strings.Replace(head, "prefix_caching = true", "prefix_caching = false", 1)
	if _, err := resolveText(t, noCache+"[offload]\ncpu_gib = 10\n"); err == nil || !strings.Contains(err.Error(), "needs prefix caching") {
		t.Errorf("without prefix caching: %v", err)
	}
}
