// Package peer is kvtier's remote KV store: a server that holds a
// pattern-filled pool and answers reads of (offset, length) chunk lists,
// and the client the remote tier and the MB2 transfer suite read through.
//
// Every connection opens with a versioned handshake on the control
// channel: the magic "KVTIER", a protocol version, then one JSON message
// each way (Hello from the client, Welcome from the server). A server
// started with a run token refuses a Hello that does not carry it. The
// data then
// moves over the same TCP connection (transport "tcp") or by RDMA READ
// from the server's registered pool over RC queue pairs whose numbers,
// GIDs and keys the handshake carried (transport "verbs").
package peer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/rdma"
)

// Magic opens every handshake frame.
const Magic = "KVTIER"

// Version is the control protocol version. A peer speaking another version
// is refused with a message naming both.
//
// Version 2 added Hello.Token (the run token of kvtier mesh and of
// servers started with --token). Its frames are those of version 1, so
// the two still understand each other's refusals: a version 2 server
// answers a version 1 hello with a Welcome.Error written as a version 1
// frame (an old client prints it as the peer's refusal), and a version 2
// client shows the text of an old server's refusal beside both versions.
const Version uint16 = 2

// minVersion is the oldest version whose frames this kvtier can read to
// tell the other side why it is refused.
const minVersion uint16 = 1

// maxMessage bounds a handshake message so a stray client cannot make the
// server allocate without limit.
const maxMessage = 1 << 20

// MaxToken bounds a run token, in bytes: escaped as JSON escapes it (six
// bytes a byte at worst) beside a verbs endpoint, it still fits in a
// hello.
const MaxToken = 4 << 10

// CheckToken refuses a run token no hello can carry, saying so: a server
// that took one would refuse every client.
func CheckToken(token string) error {
	if len(token) > MaxToken {
		return fmt.Errorf("the run token is %d bytes; a hello carries at most %d", len(token), MaxToken)
	}
	return nil
}

// Transports.
const (
	TCP   = "tcp"
	Verbs = "verbs"
)

// A Hello is the client's half of the handshake.
type Hello struct {
	Transport string `json:"transport"` // tcp | verbs
	// Token is the run token; a server started with one refuses a hello
	// without it (version 2).
	Token string `json:"token,omitempty"`
	// Write asks for a session that may write into the pool (stores); a
	// server not started writable refuses it. Older servers ignore the
	// field and refuse the first write request instead.
	Write bool `json:"write,omitempty"`
	// Verbs is the client's endpoint (GID, LID, QPNs, PSNs) for transport
	// verbs.
	Verbs *rdma.QPInfo `json:"verbs,omitempty"`
}

// A Welcome is the server's half: what the pool holds and, for verbs,
// where to read it.
type Welcome struct {
	Error     string `json:"error,omitempty"` // the server refused the hello
	PoolBytes int64  `json:"pool_bytes"`
	Seed      uint64 `json:"seed"` // pattern seed of the pool
	Mem       string `json:"mem"`  // host | gpu
	Transport string `json:"transport"`
	// Writable says the session may write into the pool (kvtier serve
	// --writable, and a hello that asked to write).
	Writable bool `json:"writable,omitempty"`
	// Verbs is the server's endpoint, with the pool's rkey and base
	// address, for transport verbs.
	Verbs *rdma.QPInfo `json:"verbs,omitempty"`
	RKey  uint32       `json:"rkey,omitempty"`
	Addr  uint64       `json:"addr,omitempty"`
	// Flushes says the peer flushes the RDMA writes into its pool on
	// request (a writable verbs session into GPU memory): the client
	// sends ctlFlush on the control connection and waits for the status.
	// Older peers leave it unset and are never asked.
	Flushes bool `json:"flushes,omitempty"`
	// Commits says the peer undoes what a writable session wrote and did
	// not commit: when the session ends without it (the writer killed,
	// its connection cut), every region it wrote holds the pool's pattern
	// again before the peer serves on, so later loads verify. The client
	// commits with an empty write request (tcp) or ctlCommit (verbs,
	// whose writes it announces first with ctlWrites, the peer not seeing
	// RDMA WRITEs). Older peers leave it unset and are never sent either.
	Commits bool `json:"commits,omitempty"`
}

// ctlFlush, sent by a verbs client on the control connection of a
// session whose Welcome said Flushes, asks the peer to flush the RDMA
// writes into its pool; the peer answers with a status (as a TCP answer
// opens: a status byte, a message length and the message).
const ctlFlush = 'F'

// ctlWrites, sent by a verbs client on the control connection of a
// session whose Welcome said Commits, announces the regions its next
// RDMA WRITEs go to, before it posts them: a write request's count and
// pairs (as on tcp), not answered. ctlCommit says that what the session
// wrote so far is to stay; the peer answers with a status.
const (
	ctlWrites = 'W'
	ctlCommit = 'C'
)

// A ProtocolError is a handshake that could not be understood.
type ProtocolError struct{ Msg string }

// Error says what in the handshake was not understood.
func (e *ProtocolError) Error() string { return "peer: handshake: " + e.Msg }

// A VersionError is a frame of another protocol version. Said is the
// error text its message carried, when it was a refusal this kvtier could
// read ("" otherwise).
type VersionError struct {
	Got  uint16
	Said string
}

// Error names both versions, and what the other side said.
func (e *VersionError) Error() string {
	msg := fmt.Sprintf("peer: handshake: the other side speaks protocol version %d, this kvtier speaks %d (run the same kvtier release on both ends)", e.Got, Version)
	if e.Said != "" {
		msg += "; it said: " + e.Said
	}
	return msg
}

// WriteFrame writes magic, version, length and the JSON of v: the
// framing of every kvtier control connection (peers and kvtier mesh).
func WriteFrame(w io.Writer, v any) error { return writeFrameVersion(w, Version, v) }

// writeFrameVersion writes a frame stamped with version ver. Its JSON
// ends in a newline (white space to JSON): a web server reached by
// mistake then has a whole line to refuse, and answers at once with an
// HTTP error that ReadFrame recognises, instead of waiting for the rest
// of a request until the handshake times out.
func writeFrameVersion(w io.Writer, ver uint16, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("peer: handshake: %w", err)
	}
	body = append(body, '\n')
	buf := make([]byte, 0, len(Magic)+2+4+len(body))
	buf = append(buf, Magic...)
	buf = binary.BigEndian.AppendUint16(buf, ver)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	buf = append(buf, body...)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame into v, refusing a wrong magic, a wrong
// version (a *VersionError), an oversized or malformed message.
func ReadFrame(r io.Reader, v any) error { return readFrame(r, v, maxMessage) }

// readFrame is ReadFrame refusing a message over limit bytes. The
// message is read as it arrives, so a frame that announces a large
// message costs only the bytes actually sent.
func readFrame(r io.Reader, v any, limit uint32) error {
	var hdr [len(Magic) + 2 + 4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &ProtocolError{"connection closed before a complete header"}
		}
		return err
	}
	if bytes.HasPrefix(hdr[:], []byte("HTTP/")) || hdr[0] == '<' {
		// A status line, or an HTML page without one (a server taking
		// the line for HTTP/0.9).
		return &ProtocolError{"it answered in HTTP: not a kvtier peer (a web server, or a serving engine's port? kvtier serve listens on 7471 unless told otherwise)"}
	}
	if string(hdr[:len(Magic)]) != Magic {
		return &ProtocolError{fmt.Sprintf("bad magic %q (not a kvtier peer?)", printable(hdr[:len(Magic)]))}
	}
	ver := binary.BigEndian.Uint16(hdr[len(Magic):])
	n := binary.BigEndian.Uint32(hdr[len(Magic)+2:])
	if n > limit {
		if ver != Version {
			return &VersionError{Got: ver}
		}
		return &ProtocolError{fmt.Sprintf("message of %d bytes exceeds %d", n, limit)}
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err == nil && len(body) < int(n) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if ver != Version {
			return &VersionError{Got: ver}
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("peer: handshake: %w", err)
		}
		return &ProtocolError{"connection closed inside a message"}
	}
	if ver != Version {
		// Every version so far says a refusal in an "error" field.
		var said struct {
			Error string `json:"error"`
		}
		json.Unmarshal(body, &said)
		return &VersionError{Got: ver, Said: said.Error}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &ProtocolError{fmt.Sprintf("malformed message: %v", err)}
	}
	return nil
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// A Chunk is one read: Len bytes from offset Src of the peer's pool into
// offset Dst of the client's destination. A write (a store) takes the
// same chunks the other way: Len bytes from offset Dst of the client's
// source into offset Src of the pool.
type Chunk struct {
	Src, Dst, Len int64
}

// Bytes returns the payload of a chunk list.
func Bytes(list []Chunk) int64 {
	var n int64
	for _, c := range list {
		n += c.Len
	}
	return n
}

// Split cuts chunks longer than max into pieces of at most max bytes, in
// order, so one huge message can spread over connections or QPs.
func Split(list []Chunk, max int64) []Chunk {
	if max <= 0 {
		return list
	}
	out := make([]Chunk, 0, len(list))
	for _, c := range list {
		for c.Len > max {
			out = append(out, Chunk{Src: c.Src, Dst: c.Dst, Len: max})
			c.Src, c.Dst, c.Len = c.Src+max, c.Dst+max, c.Len-max
		}
		if c.Len > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Share divides list into n consecutive parts of about equal bytes (some
// may be empty), one per connection or QP.
func Share(list []Chunk, n int) [][]Chunk {
	if n < 1 {
		n = 1
	}
	parts := make([][]Chunk, n)
	total := Bytes(list)
	var acc int64
	i := 0
	for _, c := range list {
		// Move to the next part once this one holds its share.
		for i < n-1 && acc >= total*int64(i+1)/int64(n) {
			i++
		}
		parts[i] = append(parts[i], c)
		acc += c.Len
	}
	return parts
}
