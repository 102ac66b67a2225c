package mesh

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// The control protocol: ranks connect to the coordinator and exchange
// frames in peer's framing (magic, protocol version, JSON), each a
// message of one kind:
//
//	rank → coordinator: join (token, member), row, config, done, beat
//	coordinator → rank: start (members, settings), refused, fail (one
//	line, the rank exits 2), task, bye (the run is over), beat
//
// Both sides send a beat every second and treat a peer silent for the
// idle timeout as gone, so no side waits forever.
const (
	kindJoin    = "join"
	kindStart   = "start"
	kindRefused = "refused"
	kindFail    = "fail"
	kindTask    = "task"
	kindRow     = "row"
	kindConfig  = "config"
	kindDone    = "done"
	kindBye     = "bye"
	kindBeat    = "beat"
)

// beatEvery is how often each side says it is alive.
const beatEvery = time.Second

// A message is one frame of the control protocol.
type message struct {
	Kind     string            `json:"kind"`
	Token    string            `json:"token,omitempty"`
	Member   *Member           `json:"member,omitempty"`
	Members  []Member          `json:"members,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
	Task     *Task             `json:"task,omitempty"`
	Row      map[string]string `json:"row,omitempty"`
	Layout   string            `json:"layout,omitempty"`
	Bytes    int64             `json:"bytes,omitempty"`
	// Direction is the configuration's direction ("" load).
	Direction string `json:"direction,omitempty"`
	Error     string `json:"error,omitempty"`
}

// A Member is one rank as the others see it.
type Member struct {
	Launch
	Host      string  `json:"host"` // the host name
	Addr      string  `json:"addr"` // its pool's HOST:PORT
	Transport string  `json:"transport"`
	Mem       string  `json:"mem"` // its pool: host | gpu
	PoolBytes int64   `json:"pool_bytes"`
	GPU       int     `json:"gpu"`                // CUDA ordinal, -1 none
	GPUBus    string  `json:"gpu_bus,omitempty"`  // its PCI address
	NIC       string  `json:"nic"`                // RDMA device (verbs) or network interface (tcp)
	NICRate   float64 `json:"nic_gbps,omitempty"` // Gb/s, 0 unknown
	// GPUNIC is the PCIe distance from its GPU to its NIC (rdma.Dist*),
	// "" without a GPU or an RDMA NIC.
	GPUNIC string `json:"gpu_nic,omitempty"`
	// Manifest is the rank's own manifest (host, GPUs, NICs); the
	// coordinator keeps it for mesh_ranks.json and sends members
	// without it.
	Manifest *results.Manifest `json:"manifest,omitempty"`
}

// A Task asks rank Dst to read from rank Src's pool (load) and to write
// into it (store), in each direction listed, every layout and size listed
// (pairwise: all of them; ring: one of each, while every other rank
// reads from its neighbour).
type Task struct {
	Step    int      `json:"step"`
	Pattern string   `json:"pattern"` // pairwise | ring
	Src     int      `json:"src"`
	Dst     int      `json:"dst"`
	Layouts []string `json:"layouts"`
	Sizes   []int64  `json:"sizes"`
	// Directions are load and store; none means load.
	Directions []tiers.Direction `json:"directions,omitempty"`
	PeerCopy   bool              `json:"peer_copy,omitempty"` // also the GPUs' peer path (intra pairs)
}

// A link is one control connection: writes are serialised, reads bounded
// by the idle timeout.
type link struct {
	c    net.Conn
	idle time.Duration
	mu   sync.Mutex
}

func (l *link) send(m message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.SetWriteDeadline(time.Now().Add(l.idle)) // an idle deadline, not a measurement
	if err := peer.WriteFrame(l.c, m); err != nil {
		return fmt.Errorf("send %s: %w", m.Kind, err)
	}
	return nil
}

// recv reads the next message other than a beat.
func (l *link) recv() (message, error) {
	for {
		var m message
		l.c.SetReadDeadline(time.Now().Add(l.idle)) // an idle deadline, not a measurement
		if err := peer.ReadFrame(l.c, &m); err != nil {
			return m, err
		}
		if m.Kind != kindBeat {
			return m, nil
		}
	}
}

// beat sends a beat every beatEvery until stop is closed or a send fails.
func (l *link) beat(stop <-chan struct{}) {
	harness.Every(beatEvery, stop, func() bool { return l.send(message{Kind: kindBeat}) == nil })
}

// rowCells turns a row into its cells for the wire.
func rowCells(r results.Row, header []string) map[string]string {
	m := make(map[string]string, len(header))
	for _, c := range header {
		if v := r.Cell(c); v != "" {
			m[c] = v
		}
	}
	return m
}

// cellsRow turns cells from the wire back into a row.
func cellsRow(cells map[string]string) (results.Row, error) {
	r := results.NewRow(Suite.Name)
	for c, v := range cells {
		if err := r.SetCell(c, v); err != nil {
			return r, err
		}
	}
	return r, nil
}
