package metrics

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
)

// gateWriter blocks every Write until open is closed, then appends to buf.
type gateWriter struct {
	open    chan struct{}
	started chan struct{} // closed by the first Write
	buf     bytes.Buffer
	writes  int
}

func newGateWriter() *gateWriter {
	return &gateWriter{open: make(chan struct{}), started: make(chan struct{})}
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == 1 {
		close(w.started)
	}
	<-w.open
	return w.buf.Write(p)
}

// randomStepRows returns n seeded steps, every field varied.
func randomStepRows(seed uint64, n int) []Step {
	r := rand.New(rand.NewPCG(seed, 1))
	ss := make([]Step, n)
	for i := range ss {
		ss[i] = Step{Instance: r.IntN(8), Start: sim.Time(r.Int64N(1 << 45)), Duration: sim.Time(r.Int64N(1 << 27)),
			Prefills: r.IntN(4), PrefillTokens: r.IntN(9000), Decodes: r.IntN(300), KVBlocksUsed: r.IntN(5000),
			KVBlocksTotal: 5000, Preempted: r.IntN(2), FLOPs: float64(r.Int64N(1 << 50)), Bytes: float64(r.Int64N(1 << 40))}
	}
	return ss
}

// randomRecordRows returns n seeded records, some rejected.
func randomRecordRows(seed uint64, n int) []Record {
	r := rand.New(rand.NewPCG(seed, 2))
	rs := make([]Record, n)
	for i := range rs {
		a := sim.Time(r.Int64N(1 << 44))
		f := a + sim.Time(r.Int64N(1<<30))
		rs[i] = Record{ID: int64(i), Instance: r.IntN(8), Arrival: a, FirstToken: f, Finish: f + sim.Time(r.Int64N(1<<34)),
			PromptTokens: r.IntN(9000), OutputTokens: 1 + r.IntN(2000), Preemptions: r.IntN(3)}
		if r.IntN(50) == 0 {
			rs[i].FirstToken, rs[i].Finish, rs[i].Rejected = 0, 0, "too-long"
		}
	}
	return rs
}

// TestWritersShared checks that the two writers of NewWriters, sharing one
// pipe, write the bytes of formatting in line, each file in order, when
// their rows interleave (a record every seventh step), over several
// Flushes of one pair.
func TestWritersShared(t *testing.T) {
	steps, recs := randomStepRows(25, 30_000), randomRecordRows(25, 30_000/7+1)
	var sb, rb bytes.Buffer
	rw, sw := NewWriters(&rb, &sb)
	wantS := []byte(StepHeader + "\n")
	wantR := []byte(RecordHeader + "\n")
	for i := range steps {
		if err := sw.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
		wantS = appendStep(wantS, &steps[i])
		if i%7 == 0 {
			if err := rw.Write(&recs[i/7]); err != nil {
				t.Fatal(err)
			}
			wantR = appendRecord(wantR, &recs[i/7])
		}
		if i == 10_000 || i == 10_001 { // a Flush mid-way, twice, is a Flush of what is held
			if err := rw.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := sw.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sb.Bytes(), wantS) {
		t.Error("steps differ from formatting in line")
	}
	if !bytes.Equal(rb.Bytes(), wantR) {
		t.Error("records differ from formatting in line")
	}
}

// TestWriterDoesNotWait checks that Write does not wait for a write in
// progress: with the io.Writer stuck in its first write, the rows of
// queueChunks − 1 more chunks are taken (the chunks made, one being
// filled, the others handed over), and once the writer goes on every row
// is written, in order.
func TestWriterDoesNotWait(t *testing.T) {
	w := newGateWriter()
	sw := NewStepWriter(w)
	steps := randomStepRows(26, queueChunks*chunkRows+100)
	n := queueChunks*chunkRows - 1 // the next Write hands over the last chunk and waits for a free one
	done := make(chan error)
	go func() {
		for i := range n {
			if err := sw.Write(&steps[i]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(w.open)
		t.Fatalf("Write waited for the io.Writer")
	}
	<-w.started
	if w.writes != 1 {
		t.Errorf("%d writes begun, want 1", w.writes)
	}
	close(w.open)
	want := []byte(StepHeader + "\n")
	for i := range steps {
		if i >= n {
			if err := sw.Write(&steps[i]); err != nil {
				t.Fatal(err)
			}
		}
		want = appendStep(want, &steps[i])
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.buf.Bytes(), want) {
		t.Error("rows written differ from formatting in line")
	}
	if sw.q.made != queueChunks {
		t.Errorf("%d chunks made, want %d", sw.q.made, queueChunks)
	}
}

// TestWriterChunksReused checks that a writer whose io.Writer keeps up
// reuses its chunks: a 200-chunk run, waiting for the pipe after each
// hand-over, makes two.
func TestWriterChunksReused(t *testing.T) {
	sw := NewStepWriter(discard{})
	s := Step{Decodes: 64, KVBlocksTotal: 1000, FLOPs: 1e12, Bytes: 2e10}
	for i := range 200 * chunkRows {
		if err := sw.Write(&s); err != nil {
			t.Fatal(err)
		}
		if i%chunkRows == chunkRows-1 {
			sw.q.p.idle.Wait()
		}
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	if sw.q.made != 2 {
		t.Errorf("%d chunks made, want 2", sw.q.made)
	}
}

// TestWriterDiscard checks that Discard drops the chunks handed over and
// not yet written, waits for the write in progress, leaves no goroutine
// running, and that both writers of the pair write nothing more and
// return errDiscarded.
func TestWriterDiscard(t *testing.T) {
	w := newGateWriter()
	var rb bytes.Buffer
	rw, sw := NewWriters(&rb, w)
	steps := randomStepRows(27, 5*chunkRows)
	recs := randomRecordRows(27, 3*chunkRows)
	for i := range steps {
		if err := sw.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range recs {
		if err := rw.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	<-w.started
	returned := make(chan struct{})
	go func() {
		sw.Discard()
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("Discard returned during a write in progress")
	case <-time.After(50 * time.Millisecond):
	}
	close(w.open)
	<-returned
	sw.q.p.mu.Lock()
	running, queued := sw.q.p.running, len(sw.q.p.jobs)
	sw.q.p.mu.Unlock()
	if running || queued != 0 {
		t.Errorf("after Discard: running %v, %d chunks queued", running, queued)
	}
	if w.writes != 1 || rb.Len() != 0 {
		t.Errorf("after Discard: %d step writes (want 1), %d record bytes (want 0)", w.writes, rb.Len())
	}
	for i := range chunkRows {
		if err := sw.Write(&steps[i]); i == chunkRows-1 && !errors.Is(err, errDiscarded) {
			t.Errorf("Write handing over a chunk after Discard: %v", err)
		}
	}
	if err := sw.Flush(); !errors.Is(err, errDiscarded) {
		t.Errorf("step Flush after Discard: %v", err)
	}
	if err := rw.Flush(); !errors.Is(err, errDiscarded) {
		t.Errorf("record Flush after Discard: %v", err)
	}
	if w.writes != 1 || rb.Len() != 0 {
		t.Errorf("written after Discard: %d step writes, %d record bytes", w.writes, rb.Len())
	}
	if !strings.HasPrefix(errDiscarded.Error(), "metrics: ") {
		t.Errorf("errDiscarded %q does not name its package", errDiscarded)
	}
}
