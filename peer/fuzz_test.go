package peer

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadFrame: handshake frames of any bytes are a Hello and a Welcome
// or an error; the message is never read past its limit, and nothing
// panics.
func FuzzReadFrame(f *testing.F) {
	frame := func(ver uint16, body string) []byte {
		b := append([]byte(Magic), 0, 0)
		binary.BigEndian.PutUint16(b[len(Magic):], ver)
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		return append(b, body...)
	}
	f.Add(frame(Version, `{"transport":"tcp","token":"t"}`))
	f.Add(frame(Version, `{"transport":"verbs","verbs":{"qpns":[1,2],"gid":"fe80::1"}}`))
	f.Add(frame(1, `{"error":"old"}`))
	f.Add(frame(Version, `{"pool_bytes":-1,"error":""}`))
	f.Add(append(frame(Version, "")[:10], 0xff, 0xff, 0xff, 0xff))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hello
		if err := readFrame(bytes.NewReader(b), &h, maxHello); err == nil && binary.BigEndian.Uint32(b[len(Magic)+2:]) > maxHello {
			t.Fatalf("a hello of %d bytes was read", binary.BigEndian.Uint32(b[len(Magic)+2:]))
		}
		var w Welcome
		ReadFrame(bytes.NewReader(b), &w)
	})
}
