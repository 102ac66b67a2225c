package rdma

import (
	"fmt"
	"net"
)

// A GIDEntry is one entry of a port's GID table as sysfs shows it.
type GIDEntry struct {
	Index int
	GID   string // sysfs text, e.g. "0000:0000:0000:0000:0000:ffff:0a00:0001"
	Type  string // "RoCE v2", "IB/RoCE v1", "" when unreadable
	// NetDev is the network interface the entry's address is on
	// (gid_attrs/ndevs), "" unknown.
	NetDev string
}

// Zero reports whether the entry holds no address.
func (e GIDEntry) Zero() bool {
	g, err := ParseGID(e.GID)
	return err != nil || g == [16]byte{}
}

// linkLocal reports whether the entry is fe80::/10.
func (e GIDEntry) linkLocal() bool {
	g, err := ParseGID(e.GID)
	return err == nil && net.IP(g[:]).IsLinkLocalUnicast()
}

// SelectGID picks the GID index a RoCE endpoint prefers. A requested
// index (>= 0) must exist and hold an address. Otherwise the first of
// RoCEChoices wins: a RoCE v2 entry neither empty nor link-local,
// IPv4-mapped preferred (on soft-RoCE over IPv4 that is index 1); an
// InfiniBand port needs no GID and gets -1. where names the device and
// port in errors.
func SelectGID(table []GIDEntry, requested int, linkLayer, where string) (int, error) {
	if requested >= 0 {
		for _, e := range table {
			if e.Index == requested {
				if e.Zero() {
					return 0, fmt.Errorf("rdma: GID index %d on %s is empty", requested, where)
				}
				return requested, nil
			}
		}
		return 0, fmt.Errorf("rdma: GID index %d does not exist on %s (%d entries)", requested, where, len(table))
	}
	if linkLayer == "InfiniBand" {
		return -1, nil
	}
	if c := RoCEChoices(table, true); len(c) > 0 {
		return c[0].Index, nil
	}
	return 0, fmt.Errorf("rdma: no RoCE v2 GID with an address on %s (give --gid-index)", where)
}

// A WR is one RDMA READ work request: Len bytes from Remote/RKey into
// Local/LKey on queue pair QP.
type WR struct {
	Local, Remote uint64
	LKey, RKey    uint32
	Len           uint32
	QP            int
}

// MaxWR is the largest read kvtier posts as one work request; longer
// chunks are split so one message can spread over QPs.
const MaxWR = 1 << 20

// Plan spreads reads over nqp queue pairs: each read longer than maxLen
// is split into pieces of at most maxLen bytes, and the pieces are dealt
// out round-robin. It returns the requests grouped by QP and qstart, where
// QP q owns wrs[qstart[q]:qstart[q+1]].
func Plan(reads []WR, nqp int, maxLen uint32) (wrs []WR, qstart []int) {
	if nqp < 1 {
		nqp = 1
	}
	if maxLen == 0 {
		maxLen = MaxWR
	}
	per := make([][]WR, nqp)
	i := 0
	for _, r := range reads {
		for r.Len > 0 {
			n := min(r.Len, maxLen)
			w := r
			w.Len, w.QP = n, i%nqp
			per[w.QP] = append(per[w.QP], w)
			i++
			r.Local += uint64(n)
			r.Remote += uint64(n)
			r.Len -= n
		}
	}
	qstart = make([]int, nqp+1)
	for q := range per {
		qstart[q] = len(wrs)
		wrs = append(wrs, per[q]...)
	}
	qstart[nqp] = len(wrs)
	return wrs, qstart
}

// Batches cuts a plan into consecutive batches of at most size requests
// per QP, each with its own qstart, so a long read is posted in several
// cgo calls with a context check between them.
func Batches(wrs []WR, qstart []int, size int) (batches [][]WR, starts [][]int) {
	nqp := len(qstart) - 1
	if size < 1 {
		size = 1
	}
	for round := 0; ; round++ {
		var b []WR
		st := make([]int, nqp+1)
		for q := range nqp {
			st[q] = len(b)
			lo := qstart[q] + round*size
			hi := min(lo+size, qstart[q+1])
			if lo < hi {
				b = append(b, wrs[lo:hi]...)
			}
		}
		st[nqp] = len(b)
		if len(b) == 0 {
			return batches, starts
		}
		batches = append(batches, b)
		starts = append(starts, st)
	}
}
