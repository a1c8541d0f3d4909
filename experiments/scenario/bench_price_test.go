package scenario

import (
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim/serve"
)

// BenchmarkSimulate100kPricing prices every batch the kernel model is
// asked for in BenchmarkSimulate100k's run, in order: the pricing part of
// that benchmark without the event loop, so that a change to the pricing
// shows through the noise of the loop's files and heaps. cold resolves the
// scenario anew for each iteration (untimed), so that its step model and
// kernel model remember nothing, as in a user's single run (the shared
// price table off); shared resolves anew too but with the process's shared
// table warm, as a sweep's later points of one model, GPU and layout find
// it; warm keeps the recording run's (as BenchmarkSimulate100k's
// iterations after its first do: its plan's step model outlives each Run).
func BenchmarkSimulate100kPricing(b *testing.B) {
	s := default100k()
	p := resolveBench(b, s)
	sm, ok := p.Serve.Instance.Step.(*hardware.StepModel)
	if !ok {
		b.Fatalf("the instance's timer is a %T, not a *hardware.StepModel", p.Serve.Instance.Step)
	}
	rec := &batchRecorder{k: sm}
	p.Serve.Instance.Step = rec
	if _, err := Run(p, b.TempDir()); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"cold", "shared", "warm"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			store := prices
			if mode == "cold" {
				store = nil
			}
			k := sm
			for i := 0; i < b.N; i++ {
				if mode != "warm" {
					// A new plan: its step model and kernel model new.
					b.StopTimer()
					saved := prices
					prices = store
					q, err := s.Resolve()
					prices = saved
					if err != nil {
						b.Fatal(err)
					}
					k = q.Serve.Instance.Step.(*hardware.StepModel)
					b.StartTimer()
				}
				var sum float64
				for j := range rec.batches {
					s, _, _ := k.Step(rec.batches[j])
					sum += s
				}
				if sum != rec.sum {
					b.Fatalf("priced sum %v, the run's %v", sum, rec.sum)
				}
			}
			b.ReportMetric(float64(len(rec.batches)), "steps")
		})
	}
}

// batchRecorder records the batches k is asked to price, and their sum.
type batchRecorder struct {
	k       serve.StepTimer
	batches []models.Batch
	sum     float64
}

func (r *batchRecorder) IterOverhead() float64 {
	return r.k.(interface{ IterOverhead() float64 }).IterOverhead()
}

func (r *batchRecorder) Step(b models.Batch) (seconds, flops, bytes float64) {
	s, f, y := r.k.Step(b)
	r.batches = append(r.batches, b)
	r.sum += s
	return s, f, y
}
