package trace

import (
	"io"
	"runtime"
	"strconv"
	"testing"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// azureStream is an io.Reader over an n-row Azure trace, formatted on the
// fly without fmt: row i is at 18:00:00 + i·100 ms on 2023-11-16 (later
// days as it passes midnight), with genPrompt(i) and genOutput(i) tokens.
type azureStream struct {
	n, i int
	buf  []byte
	off  int
}

func (s *azureStream) Read(p []byte) (int, error) {
	if s.off == len(s.buf) {
		if s.i == s.n {
			return 0, io.EOF
		}
		s.buf, s.off = s.buf[:0], 0
		if s.i == 0 {
			s.buf = append(s.buf, "TIMESTAMP,ContextTokens,GeneratedTokens\n"...)
		}
		for k := 0; k < 1024 && s.i < s.n; k++ {
			s.buf = s.row(s.buf, s.i)
			s.i++
		}
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

func two(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

func (s *azureStream) row(b []byte, i int) []byte {
	ms := int64(i) * 100
	sec := 18*3600 + ms/1000
	b = append(b, "2023-11-"...)
	b = two(b, 16+sec/86400)
	b = append(b, ' ')
	sec %= 86400
	b = two(b, sec/3600)
	b = append(b, ':')
	b = two(b, sec/60%60)
	b = append(b, ':')
	b = two(b, sec%60)
	b = append(b, '.', byte('0'+ms%1000/100), '0', '0', '0', '0', '0', '0', ',')
	b = strconv.AppendInt(b, int64(genPrompt(i)), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(genOutput(i)), 10)
	return append(b, '\n')
}

// TestStream10M replays a 10,000,000-row Azure trace (about 380 MB of CSV,
// never held: it is formatted as it is read) through a reader, a window, a
// rate scaling and clipping, and checks that the whole pass allocates less
// than 1 MiB: memory does not grow with the trace. 10M rows at 100 ms span
// 999,999.9 s; after the window from 1000 s and scaling ×4 the last request
// arrives at (999,999.9 − 1000)/4 = 249,749.975 s.
func TestStream10M(t *testing.T) {
	const n = 10_000_000
	if testing.Short() {
		t.Skip("10M rows: about 3 s")
	}
	rd, err := NewReader(&azureStream{n: n}, "stream.csv", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var src workload.Source = Window(rd, 1000*sim.Second, 0)
	src = Scale(src, 4)
	src = Clip(src, 2048)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var r workload.Request
	var k int64
	var last sim.Time
	for src.Next(&r) {
		k++
		last = r.Arrival
	}
	runtime.ReadMemStats(&after)
	if err := workload.SourceErr(src); err != nil {
		t.Fatal(err)
	}
	// Rows from 1000 s: 10,000,000 − 10,000.
	if k != n-10_000 || last != sim.FromSeconds(249_749.975) || rd.Counts().Rows != n {
		t.Errorf("%d requests, last at %v, counts %+v", k, last, rd.Counts())
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("allocated %d bytes over %d rows: memory grows with the trace", d, n)
	}
	t.Logf("allocated %d bytes in %d mallocs over %d rows", after.TotalAlloc-before.TotalAlloc, after.Mallocs-before.Mallocs, n)
}
