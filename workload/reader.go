package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/kvtier/kvtier/option"
)

// ErrNoRequests is returned for a trace with no usable request.
var ErrNoRequests = errors.New("no usable request")

// Options say how a trace is read.
type Options struct {
	// BlockTokens overrides the tokens per hash id (option "trace-block");
	// 0 takes the format's (512 Mooncake, 16 Alibaba).
	BlockTokens int
	// Reorder is how many requests the reader holds to put lines into
	// timestamp order (option "reorder"); 0 takes DefaultReorder. A line
	// earlier than a request already handed out is an error: the trace is
	// out of order by more than the window.
	Reorder int
	// Stdin is read for the path "-", as bench2csv reads it; nil leaves
	// "-" a file name.
	Stdin io.Reader
}

// DefaultReorder is the reorder window when Options.Reorder is 0.
const DefaultReorder = 4096

// MaxReorder bounds the reorder window.
const MaxReorder = 1 << 20

// MaxWindowBytes bounds the memory of the requests the reorder window
// holds, whatever their lines hold.
const MaxWindowBytes = 1 << 30

// windowBytes is MaxWindowBytes; tests lower it.
var windowBytes int64 = MaxWindowBytes

// maxLineBytes bounds one line: a request of a million tokens in 16-token
// blocks is 62,500 hash ids, well under a megabyte of text.
const maxLineBytes = 64 << 20

// Validate reports every unusable option, naming it.
func (o Options) Validate() error {
	var errs []error
	errs = append(errs, option.Range("trace-block", o.BlockTokens, 0, maxLength, "0: the format's"),
		option.Range("reorder", o.Reorder, 0, MaxReorder, fmt.Sprintf("0: %d", DefaultReorder)))
	return errors.Join(errs...)
}

// A Malformed is one line that could not be used.
type Malformed struct {
	Line int
	Err  error
}

// maxMalformedKept bounds the malformed lines kept with their reasons; all
// of them are counted.
const maxMalformedKept = 20

// A Reader streams the requests of one trace in timestamp order (file
// order for ties), holding at most the reorder window in memory. Sessions
// come from session_id where the trace has it, else from parent_chat_id
// chains (Alibaba); a Mooncake trace without session ids has one session
// per request (SessionsKnown reports which).
type Reader struct {
	Name string

	sc          *bufio.Scanner
	closer      io.Closer
	opts        Options
	format      Format
	blockTokens int

	fields    fields // the line being parsed
	lines     int
	malformed []Malformed
	nBad      int
	pending   lineQueue
	held      int64 // bytes the pending lines hold
	emitted   int
	lastTime  float64
	eof       bool
	sess      sessions
}

// Open opens a trace file (gzip-compressed or not) for reading; the path
// "-" reads o.Stdin where it is set.
func Open(path string, o Options) (*Reader, error) {
	if path == "-" && o.Stdin != nil {
		return NewReader(o.Stdin, "stdin", o)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path, o)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// NewReader reads a trace from in, gunzipping it when it starts with the
// gzip magic; name is used in errors.
func NewReader(in io.Reader, name string, o Options) (*Reader, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Reorder == 0 {
		o.Reorder = DefaultReorder
	}
	br := bufio.NewReaderSize(in, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		in = zr
	} else {
		in = br
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<16), maxLineBytes)
	return &Reader{Name: name, sc: sc, opts: o, sess: newSessions()}, nil
}

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Next returns the next request in timestamp order, or io.EOF after the
// last. Malformed lines are skipped and counted; a read error, a line
// longer than 64 MiB or a line out of order beyond the window ends the
// stream with an error.
func (r *Reader) Next() (*Request, error) {
	return r.NextContext(context.Background())
}

// NextContext is Next that gives up with ctx's error once ctx is done,
// also while it reads past lines that hold no request (blank, malformed):
// a file of millions of those never keeps a Ctrl-C waiting.
func (r *Reader) NextContext(ctx context.Context) (*Request, error) {
	for !r.eof && r.pending.len() <= r.opts.Reorder {
		if r.lines%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := r.readLine(); err != nil {
			return nil, err
		}
	}
	if r.pending.len() == 0 {
		return nil, io.EOF
	}
	l := r.pending.pop()
	r.held -= l.size()
	r.lastTime = l.time
	req := r.sess.resolve(&l, r.emitted, r.blockTokens)
	r.emitted++
	return req, nil
}

// readLine reads one line into the window, or notes the end of the file.
func (r *Reader) readLine() error {
	if !r.sc.Scan() {
		r.eof = true
		if err := r.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return fmt.Errorf("line %d: longer than %d MiB", r.lines+1, maxLineBytes>>20)
			}
			return fmt.Errorf("line %d: %w", r.lines+1, err)
		}
		return nil
	}
	r.lines++
	b := bytes.TrimSpace(r.sc.Bytes())
	if len(b) == 0 {
		return nil
	}
	l, err := parseLine(&r.fields, b, r.lines, r.opts.BlockTokens, r.format)
	if err != nil {
		r.bad(err)
		return nil
	}
	if r.format == "" {
		r.format = l.format
		r.blockTokens = r.opts.BlockTokens
		if r.blockTokens == 0 {
			r.blockTokens = l.format.DefaultBlockTokens()
		}
	}
	if r.emitted > 0 && l.time < r.lastTime {
		return fmt.Errorf("line %d: timestamp %s s is earlier than requests already analysed (%s s): the trace is out of timestamp order by more than the reorder window of %d requests; sort it or raise --reorder",
			l.num, strconv.FormatFloat(l.time, 'f', -1, 64), strconv.FormatFloat(r.lastTime, 'f', -1, 64), r.opts.Reorder)
	}
	if r.held += l.size(); r.held > windowBytes {
		return fmt.Errorf("line %d: the reorder window of %d requests holds more than %d MiB: lower --reorder", l.num, r.opts.Reorder, windowBytes>>20)
	}
	r.pending.push(l)
	return nil
}

// size is about the memory a pending line holds.
func (l *line) size() int64 {
	return int64(8*len(l.hashes) + len(l.id) + len(l.parent) + len(l.session) + len(l.typ) + 128)
}

func (r *Reader) bad(err error) {
	r.nBad++
	if len(r.malformed) < maxMalformedKept {
		r.malformed = append(r.malformed, Malformed{Line: r.lines, Err: err})
	}
}

// ReadStats says what a Reader has read so far.
type ReadStats struct {
	Format        Format
	BlockTokens   int
	Lines         int         // lines read, blank ones included
	Requests      int         // requests handed out
	Malformed     int         // lines skipped as malformed
	FirstBad      []Malformed // the first of them with their reasons
	Sessions      int
	SessionsKnown bool // false: no session ids and no parent chains
	// DanglingParents counts requests whose parent_chat_id names no
	// earlier request (a sample cut from a larger trace): each starts a
	// session of its own.
	DanglingParents int
}

// Stats returns what the reader has read so far.
func (r *Reader) Stats() ReadStats {
	return ReadStats{
		Format: r.format, BlockTokens: r.blockTokens, Lines: r.lines, Requests: r.emitted,
		Malformed: r.nBad, FirstBad: r.malformed, Sessions: r.sess.count,
		SessionsKnown: r.sess.known, DanglingParents: r.sess.dangling,
	}
}

// BadLines describes the malformed lines in one line of text: the count
// and the first ones with their reasons.
func (s ReadStats) BadLines() string {
	if s.Malformed == 0 {
		return "no malformed lines"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d malformed line(s):", s.Malformed)
	for i, m := range s.FirstBad {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " line %d: %v", m.Line, m.Err)
	}
	if s.Malformed > len(s.FirstBad) {
		fmt.Fprintf(&b, "; and %d more", s.Malformed-len(s.FirstBad))
	}
	return b.String()
}

// arriving is what an arrivalHeap orders: a time and, among equal times,
// a sequence number.
type arriving interface {
	arrival() (time float64, seq int)
}

// An arrivalHeap (container/heap) orders items by arrival time, then
// sequence number: pending trace lines by timestamp and line number,
// synthetic sessions by their next turn and id.
type arrivalHeap[T arriving] []T

func (h arrivalHeap[T]) Len() int { return len(h) }
func (h arrivalHeap[T]) Less(i, j int) bool {
	ti, si := h[i].arrival()
	tj, sj := h[j].arrival()
	if ti != tj {
		return ti < tj
	}
	return si < sj
}
func (h arrivalHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *arrivalHeap[T]) Push(x any)   { *h = append(*h, x.(T)) }
func (h *arrivalHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	return x
}

func (l line) arrival() (float64, int) { return l.time, l.num }

// A lineQueue holds the reorder window: the lines that came in timestamp
// order in a FIFO, any other in an arrivalHeap; the next line out is the
// earlier of their heads. A trace in order never touches the heap.
type lineQueue struct {
	fifo []line
	head int
	heap arrivalHeap[line]
}

func (q *lineQueue) len() int { return len(q.fifo) - q.head + len(q.heap) }

func (q *lineQueue) push(l line) {
	if n := len(q.fifo); n == q.head || l.time >= q.fifo[n-1].time {
		q.fifo = append(q.fifo, l)
		return
	}
	heap.Push(&q.heap, l)
}

// pop removes and returns the earliest line; the queue must not be empty.
func (q *lineQueue) pop() line {
	if q.head == len(q.fifo) || (len(q.heap) > 0 && earlier(q.heap[0], q.fifo[q.head])) {
		return heap.Pop(&q.heap).(line)
	}
	l := q.fifo[q.head]
	q.fifo[q.head] = line{}
	q.head++
	if q.head > 1024 && 2*q.head > len(q.fifo) {
		q.fifo = q.fifo[:copy(q.fifo, q.fifo[q.head:])]
		q.head = 0
	}
	return l
}

// earlier reports whether a comes out before b: by time, then line.
func earlier(a, b line) bool {
	return a.time < b.time || (a.time == b.time && a.num < b.num)
}
