package metrics

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// chunkRows is how many rows a writer holds before it hands them over, a
// chunk, to be formatted and written while the simulation fills the next:
// 2,048 rows, about 200 KB of steps.csv (rows of about 84 bytes in the
// 100k-request rate-12 run: 60 MB for 720k steps), one write(2) a chunk.
// With GOMAXPROCS ≥ 2 formatting and writing the files (a third of a 100k
// run's CPU) then overlap the simulation.
const chunkRows = 2048

// queueChunks is the most chunks one writer holds: the one being filled
// and those handed over and not yet written. A chunk is made only when no
// written one is free, so a run whose writes keep up holds two or three;
// 16 bound a writer that falls behind to 2.8 MB of steps (88-byte rows)
// or 4.5 MB of records (144 bytes), and the simulation waits for a free
// chunk only then. (Fresh memory is dear: a chunk of steps is 44 pages
// touched for the first time, about 0.4 ms on a VM that charges 10 µs a
// page.)
const queueChunks = 16

// A pipe formats and writes the chunks that its writers hand over, in the
// order they were handed over, one at a time, on a goroutine of its own:
// started when a chunk is handed over and none runs, ended when none is
// left, so no goroutine outlives the work. A chunk is handed over under
// mu and no more: the simulation goroutine never waits for a write, only
// for a free chunk when queueChunks are held (the writes far behind) and
// at Flush. One pipe serves both files of a run (NewWriters), so their
// writes do not take a second core from the simulation and share one
// buffer of formatted bytes.
type pipe struct {
	mu      sync.Mutex
	jobs    []emitter // a writer for each chunk handed over, in order; jobs[head:] are waiting
	head    int
	running bool           // a goroutine runs jobs
	idle    sync.WaitGroup // the goroutine that runs jobs, if any
	out     []byte         // formatted bytes, owned by the goroutine that runs jobs
}

// An emitter is a writer's side of a pipe: take moves its oldest chunk
// handed over to the pipe's goroutine (under p.mu), emit formats and
// writes it, drop forgets those handed over (discard, under p.mu).
type emitter interface {
	take()
	emit(p *pipe)
	drop()
}

// push queues a chunk of q's and starts a goroutine if none runs; p.mu is
// held.
func (p *pipe) push(q emitter) {
	if p.head > 0 && len(p.jobs) == cap(p.jobs) { // reuse the consumed front rather than grow
		n := copy(p.jobs, p.jobs[p.head:])
		clear(p.jobs[n:])
		p.jobs, p.head = p.jobs[:n], 0
	}
	p.jobs = append(p.jobs, q)
	if !p.running {
		p.running = true
		p.idle.Add(1)
		go p.run()
	}
}

// run emits the chunks queued until none is left.
func (p *pipe) run() {
	defer p.idle.Done()
	for {
		p.mu.Lock()
		if p.head == len(p.jobs) {
			p.jobs, p.head, p.running = p.jobs[:0], 0, false
			p.mu.Unlock()
			return
		}
		q := p.jobs[p.head]
		p.jobs[p.head] = nil
		p.head++
		q.take()
		p.mu.Unlock()
		q.emit(p)
	}
}

// A chunk is a run of rows handed over; the last of a Flush has flush set.
type chunk[T any] struct {
	rows  []T
	flush bool
}

// rowQueue holds a CSV writer's rows and hands each full chunk to its
// pipe. Chunks reach w in order, whole: the bytes are those of formatting
// in line. A write error is returned by the next Write that hands over a
// chunk after the pipe found it (and by every Write after), and by Flush;
// the rows handed over after a failed write are dropped.
type rowQueue[T any] struct {
	p      *pipe
	w      io.Writer
	format func([]byte, *T) []byte
	header string // written before the first row
	what   string // "records" or "steps", for errors

	// Owned by the goroutine that writes rows.
	rows []T      // the chunk being filled
	made int      // chunks made
	seen error    // the write error last seen at a hand-over
	free chan []T // chunks written, for reuse; never more than made

	// Under p.mu.
	full     [queueChunks]chunk[T] // handed over, not yet written: n from first, a ring
	first, n int
	err      error     // the first write error, or errDiscarded
	flushed  chan bool // Flush's last chunk is written (and w flushed)

	// Owned by the pipe's goroutine.
	cur    chunk[T] // the chunk being written
	failed bool     // err was set when cur was taken: write nothing
	begun  bool     // the header is written
}

func newRowQueue[T any](p *pipe, w io.Writer, what, header string, format func([]byte, *T) []byte) *rowQueue[T] {
	return &rowQueue[T]{p: p, w: w, format: format, header: header, what: what, rows: make([]T, 0, chunkRows),
		made: 1, free: make(chan []T, queueChunks), flushed: make(chan bool, 1)}
}

// add queues a copy of v and hands the chunk over once it is full.
func (q *rowQueue[T]) add(v *T) error {
	q.rows = append(q.rows, *v)
	if len(q.rows) < chunkRows {
		return q.seen
	}
	q.handOver(false)
	q.next()
	return q.seen
}

// handOver hands q.rows to the pipe (drops them after a write error) and
// notes the error the pipe found, if any.
func (q *rowQueue[T]) handOver(flush bool) {
	p := q.p
	p.mu.Lock()
	if q.err == nil {
		q.full[(q.first+q.n)%queueChunks] = chunk[T]{q.rows, flush}
		q.n++
		p.push(q)
		q.rows = nil
	}
	q.seen = q.err
	p.mu.Unlock()
}

// next makes q.rows an empty chunk (unless it kept one after an error): a
// written one if any is free, else a new one while fewer than queueChunks
// are made, else the next written.
func (q *rowQueue[T]) next() {
	if q.rows != nil {
		q.rows = q.rows[:0]
		return
	}
	select {
	case q.rows = <-q.free:
	default:
		if q.made < queueChunks {
			q.made++
			q.rows = make([]T, 0, chunkRows)
		} else {
			q.rows = <-q.free
		}
	}
}

// take moves the oldest chunk handed over to cur; p.mu is held.
func (q *rowQueue[T]) take() {
	q.cur, q.full[q.first] = q.full[q.first], chunk[T]{}
	q.first = (q.first + 1) % queueChunks
	q.n--
	q.failed = q.err != nil
}

// emit formats cur (after the header if none was written) and writes it,
// flushes w if the chunk ends a Flush and w has a Flush method (a
// bufio.Writer), and frees the chunk. It runs on the pipe's goroutine.
func (q *rowQueue[T]) emit(p *pipe) {
	c := q.cur
	q.cur = chunk[T]{}
	if !q.failed {
		b := p.out[:0]
		if !q.begun {
			q.begun = true
			b = append(b, q.header+"\n"...)
		}
		for i := range c.rows {
			b = q.format(b, &c.rows[i])
		}
		p.out = b
		var err error
		if len(b) > 0 {
			_, err = q.w.Write(b)
		}
		if f, ok := q.w.(interface{ Flush() error }); ok && err == nil && c.flush {
			err = f.Flush()
		}
		if err != nil {
			p.mu.Lock()
			q.err = fmt.Errorf("metrics: writing %s: %w", q.what, err)
			p.mu.Unlock()
		}
	}
	q.free <- c.rows[:0]
	if c.flush {
		q.flushed <- true
	}
}

// flush hands over the rows held (the header alone if no row was written)
// and waits until they are written and w is flushed.
func (q *rowQueue[T]) flush() error {
	q.handOver(true)
	if q.rows == nil { // handed over
		<-q.flushed
		q.p.mu.Lock()
		q.seen = q.err
		q.p.mu.Unlock()
	}
	q.next()
	return q.seen
}

// errDiscarded is the error of a writer whose rows were dropped by
// Discard.
var errDiscarded = errors.New("metrics: rows discarded")

// discard drops the chunks of p not yet written and waits for the write in
// progress, if any: then no goroutine of p's runs. A writer whose rows were
// dropped returns errDiscarded from then on and writes nothing more. Call
// it from the goroutine that writes rows.
func (p *pipe) discard() {
	p.mu.Lock()
	for _, q := range p.jobs[p.head:] {
		q.drop()
	}
	clear(p.jobs)
	p.jobs, p.head = p.jobs[:0], 0
	p.mu.Unlock()
	p.idle.Wait()
}

// drop forgets the chunks handed over and not yet written; p.mu is held.
func (q *rowQueue[T]) drop() {
	clear(q.full[:])
	q.first, q.n = 0, 0
	if q.err == nil {
		q.err = errDiscarded
	}
}
