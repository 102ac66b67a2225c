package workload

import (
	"bufio"
	"container/heap"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kvtier/kvtier/option"
)

// GenOptions describe a synthetic multi-session trace. Every mean is the
// middle of a uniform range from half to one and a half times it (turns:
// from 1 to 2·Turns−1), except think times, which are exponential; with
// Fixed, every session has exactly Turns turns of exactly TurnTokens new
// tokens and OutputTokens output.
type GenOptions struct {
	Sessions      int           // sessions, starting uniformly over Duration
	Turns         int           // mean turns per session (1 to 2·Turns−1)
	SystemPrompts int           // distinct system prompts the sessions share
	SystemTokens  int           // tokens of each system prompt
	TurnTokens    int           // mean new user tokens per turn
	OutputTokens  int           // mean output tokens per turn
	Think         time.Duration // mean gap between a session's turns
	Duration      time.Duration // the window sessions start in
	BlockTokens   int           // tokens per hash id (512, Mooncake's)
	Seed          uint64
	// Fixed makes every session the same shape: Turns turns, TurnTokens
	// and OutputTokens exactly (option "fixed-sessions").
	Fixed bool
}

// DefaultGenOptions gives about 12,000 requests and 290,000 block
// references in 512-token blocks: the size the analysis is benchmarked at.
func DefaultGenOptions() GenOptions {
	return GenOptions{
		Sessions: 1000, Turns: 12, SystemPrompts: 8, SystemTokens: 2048,
		TurnTokens: 900, OutputTokens: 400, Think: 30 * time.Second,
		Duration: 10 * time.Minute, BlockTokens: Mooncake.DefaultBlockTokens(), Seed: 1,
	}
}

// Validate reports every unusable option, naming it.
func (o GenOptions) Validate() error {
	var errs []error
	for _, f := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"sessions", o.Sessions, 1, maxGenSessions}, {"turns", o.Turns, 1, maxGenTurns},
		{"shared-prompts", o.SystemPrompts, 0, maxGenSessions},
		{"system-prompt", o.SystemTokens, 0, maxLength}, {"turn-tokens", o.TurnTokens, 1, maxLength},
		{"output-tokens", o.OutputTokens, 0, maxLength}, {"trace-block", o.BlockTokens, 1, maxLength},
	} {
		errs = append(errs, option.Range(f.name, f.v, f.min, f.max))
	}
	errs = append(errs, option.NotNegative("think", o.Think), option.NotNegative("arrival-window", o.Duration))
	return errors.Join(errs...)
}

// Bounds of the generator: it holds every session and system prompt in
// memory while it writes.
const (
	maxGenSessions = 1 << 22
	maxGenTurns    = 1 << 16
)

// GenStats count what Generate wrote.
type GenStats struct {
	Requests, Sessions, BlockRefs int
}

// A genSession is one session of the generator between its turns.
type genSession struct {
	id, sys, turns, turn int
	next                 float64  // arrival of the next turn, seconds
	history              int      // tokens before the next turn's new ones
	blocks               []uint64 // ids of the session's full blocks past the system prompt's
}

// Generate writes a synthetic trace in the Mooncake format, one request
// per line in timestamp order: each session's turn sends its system
// prompt, every earlier turn and answer, and new tokens; hash ids are
// prefix-block ids as Mooncake remaps them (small integers in order of
// first use), equal wherever the prefix is the same (a shared system
// prompt, a session's history), and a partial last block gets an id of
// its own. Each line adds session_id and turn, which Mooncake's own
// readers ignore.
func Generate(w io.Writer, o GenOptions) (GenStats, error) {
	if err := o.Validate(); err != nil {
		return GenStats{}, err
	}
	g := &generator{o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x6b76746965722074)), w: bufio.NewWriter(w)}
	g.systemPrompts()
	for i := range o.Sessions {
		s := &genSession{id: i, turns: o.Turns}
		if !o.Fixed {
			s.turns = 1 + g.rng.IntN(2*o.Turns-1)
		}
		if o.SystemPrompts > 0 {
			s.sys = g.rng.IntN(o.SystemPrompts)
		}
		s.next = g.rng.Float64() * o.Duration.Seconds()
		s.history = o.SystemTokens
		heap.Push(&g.queue, s)
	}
	g.stats.Sessions = o.Sessions
	for len(g.queue) > 0 {
		s := g.queue[0]
		if err := g.turn(s); err != nil {
			return g.stats, err
		}
		if s.turn == s.turns {
			heap.Pop(&g.queue)
			continue
		}
		s.next += g.rng.ExpFloat64() * o.Think.Seconds()
		heap.Fix(&g.queue, 0)
	}
	return g.stats, g.w.Flush()
}

type generator struct {
	o      GenOptions
	rng    *rand.Rand
	w      *bufio.Writer
	nextID uint64
	sys    [][]uint64 // per system prompt: ids of its full blocks
	queue  arrivalHeap[*genSession]
	stats  GenStats
	buf    []byte
}

func (g *generator) id() uint64 {
	g.nextID++
	return g.nextID - 1
}

func (g *generator) systemPrompts() {
	g.sys = make([][]uint64, g.o.SystemPrompts)
	for i := range g.sys {
		for range g.o.SystemTokens / g.o.BlockTokens {
			g.sys[i] = append(g.sys[i], g.id())
		}
	}
}

// around returns a uniform integer from mean/2 to 3·mean/2; mean itself
// with Fixed.
func (g *generator) around(mean int) int {
	if mean <= 1 || g.o.Fixed {
		return mean
	}
	return mean/2 + g.rng.IntN(mean+1)
}

// turn writes session s's next request.
func (g *generator) turn(s *genSession) error {
	s.turn++
	input := s.history + g.around(g.o.TurnTokens)
	output := g.around(g.o.OutputTokens)
	b := g.o.BlockTokens
	sysFull := 0
	if g.o.SystemPrompts > 0 {
		sysFull = len(g.sys[s.sys])
	}
	full := input / b
	for len(s.blocks) < full-sysFull {
		s.blocks = append(s.blocks, g.id())
	}
	line := g.buf[:0]
	line = append(line, `{"timestamp":`...)
	line = strconv.AppendInt(line, int64(s.next*1000), 10)
	line = append(line, `,"input_length":`...)
	line = strconv.AppendInt(line, int64(input), 10)
	line = append(line, `,"output_length":`...)
	line = strconv.AppendInt(line, int64(output), 10)
	line = append(line, `,"hash_ids":[`...)
	for k := range full {
		id := uint64(0)
		if k < sysFull {
			id = g.sys[s.sys][k]
		} else {
			id = s.blocks[k-sysFull]
		}
		line = appendID(line, k, id)
	}
	if input%b != 0 {
		line = appendID(line, full, g.id())
	}
	line = append(line, `],"session_id":`...)
	line = strconv.AppendInt(line, int64(s.id), 10)
	line = append(line, `,"turn":`...)
	line = strconv.AppendInt(line, int64(s.turn), 10)
	line = append(line, "}\n"...)
	g.buf = line
	g.stats.Requests++
	g.stats.BlockRefs += (input + b - 1) / b
	s.history = input + output
	_, err := g.w.Write(line)
	return err
}

func appendID(line []byte, k int, id uint64) []byte {
	if k > 0 {
		line = append(line, ',')
	}
	return strconv.AppendUint(line, id, 10)
}

func (s *genSession) arrival() (float64, int) { return s.next, s.id }
