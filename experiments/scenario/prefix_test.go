package scenario

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/sim/workload/trace"
)

const mooncakeConv = "../../../shared/data/traces/mooncake-fast25/conversation_trace.jsonl"

// TestPrefixCacheReachesTraceReuse replays the Mooncake conversation trace
// with prefix caching on one instance whose KV cache is large enough to
// hold most of the trace (a GPU with 5 TB of memory, declared in a TOML
// file, at a fiftieth of the trace's rate so that nothing is preempted and
// recomputed), and checks that the engine's hit rate reaches the reuse
// ratio that trace stats computes for an unbounded cache (36.6 %: the share
// of 512-token blocks seen before). The two differ only in the denominator
// (tokens against blocks, whose last one is partial): within 1 point.
func TestPrefixCacheReachesTraceReuse(t *testing.T) {
	if _, err := os.Stat(mooncakeConv); err != nil {
		t.Skipf("../shared/data is absent (%v): skipping the Mooncake replay", err)
	}
	st, err := trace.StatsFile(mooncakeConv, trace.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gpus := filepath.Join(dir, "gpus.toml")
	os.WriteFile(gpus, []byte("[[gpu]]\nname = \"bigmem\"\nbf16_flops = 989.4e12\nmem_bytes = 5000e9\nmem_bw = 3350e9\nlink_bw = 450e9\nhost_bw = 64e9\n"), 0o644)
	s := Default()
	s.GPUsFile, s.GPU = gpus, "bigmem"
	s.Batch.PrefixCaching = true
	abs, _ := filepath.Abs(mooncakeConv)
	s.Workload.Trace = &trace.Options{File: abs, Scale: 0.02}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	hit := rep.Counts().PrefixHitRate
	t.Logf("engine hit rate %.4f, trace reuse %.4f, preemptions %d", hit, st.PrefixReuse, rep.Result.Preemptions)
	if rep.Result.Preemptions != 0 || math.Abs(hit-st.PrefixReuse) > 0.01 {
		t.Fatalf("hit rate %.4f vs trace reuse %.4f (preemptions %d): want within 0.01 and no preemption", hit, st.PrefixReuse, rep.Result.Preemptions)
	}
}

// Synthetic multi-turn conversations carry their history as a prefix, so
// with prefix caching a large share of prompt tokens comes from the cache
// and TTFT falls; without caching the same workload hits nothing.
func TestConversationsHitPrefixCache(t *testing.T) {
	run := func(cache bool) *Report {
		s := Default()
		s.Workload.Requests, s.Workload.Rate = 1000, 6
		s.Workload.Turns, s.Workload.Conversations = 5, 40
		s.Batch.PrefixCaching = cache
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	off, on := run(false), run(true)
	hit := on.Counts().PrefixHitRate
	t.Logf("hit rate %.3f; mean TTFT %.1f ms without cache, %.1f ms with", hit, off.Summary.TTFT.Mean, on.Summary.TTFT.Mean)
	if off.Counts().PrefixHitRate != 0 || hit < 0.2 || on.Summary.TTFT.Mean >= off.Summary.TTFT.Mean {
		t.Fatalf("hit rate %.3f (want ≥ 0.2), TTFT %.1f vs %.1f ms (want lower with the cache)", hit, on.Summary.TTFT.Mean, off.Summary.TTFT.Mean)
	}
}
