package trace

import (
	"bytes"
	"testing"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// benchRead parses a generated 100,000-row trace per iteration and reports
// rows per second (one core: the reader is single-threaded).
func benchRead(b *testing.B, f Format) {
	const n = 100_000
	data := genTrace(f, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var r workload.Request
	b.ResetTimer()
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), "bench", ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for rd.Next(&r) {
			k++
		}
		if rd.Err() != nil || k != n {
			b.Fatalf("%d rows, %v", k, rd.Err())
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkReadAzure(b *testing.B)    { benchRead(b, Azure) }
func BenchmarkReadMooncake(b *testing.B) { benchRead(b, Mooncake) }
func BenchmarkReadBurstGPT(b *testing.B) { benchRead(b, BurstGPT) }
func BenchmarkReadLengths(b *testing.B)  { benchRead(b, Lengths) }
func BenchmarkReadServesim(b *testing.B) { benchRead(b, Servesim) }

// BenchmarkPipeline reads an Azure trace through a window, a sample, rate
// scaling and clipping: the per-request cost of a transformed replay.
func BenchmarkPipeline(b *testing.B) {
	const n = 100_000
	data := genTrace(Azure, n)
	b.ReportAllocs()
	var r workload.Request
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), "bench", ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var src workload.Source = Window(rd, sim.Second, 0)
		src = Scale(src, 2.5)
		src = Clip(src, 2048)
		for src.Next(&r) {
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadShared parses the shared traces from memory (skipped
// without ../shared/data): the Mooncake conversation trace's rows carry 24
// hash_ids on average (288,500 blocks over 12,031 rows), so its rows per
// second are the heaviest case.
func BenchmarkReadShared(b *testing.B) {
	for _, tr := range sharedTraces {
		b.Run(tr.short, func(b *testing.B) {
			data, err := readShared(tr.path)
			if err != nil {
				b.Skip(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var r workload.Request
			for b.Loop() {
				rd, err := NewReader(bytes.NewReader(data), tr.path, ReaderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for rd.Next(&r) {
				}
				if rd.Err() != nil || rd.Counts().Yielded != tr.rows {
					b.Fatalf("%+v, %v", rd.Counts(), rd.Err())
				}
			}
			b.ReportMetric(float64(tr.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
