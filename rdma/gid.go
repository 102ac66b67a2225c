package rdma

import (
	"fmt"
	"net"
	"strings"
)

// GID families: RoCE v2 carries a GID as an IPv4 address when it is
// IPv4-mapped (::ffff:a.b.c.d), else as an IPv6 address. Both ends of a
// connection must use the same family, or the connect succeeds and every
// read fails.
const (
	FamilyIPv4 = "IPv4"
	FamilyIPv6 = "IPv6"
)

// Family returns a GID's family (FamilyIPv4 for an IPv4-mapped GID,
// FamilyIPv6 for any other), "" for text that is no GID.
func Family(gid string) string {
	g, err := ParseGID(gid)
	if err != nil {
		return ""
	}
	if net.IP(g[:]).To4() != nil {
		return FamilyIPv4
	}
	return FamilyIPv6
}

// A GIDChoice is a GID an endpoint offers its peer, by index.
type GIDChoice struct {
	Index int    `json:"index"`
	GID   string `json:"gid"` // IPv6 notation
}

// String renders the choice as "GID (index N, family)".
func (c GIDChoice) String() string {
	return fmt.Sprintf("%s (index %d, %s)", c.GID, c.Index, Family(c.GID))
}

// RoCEChoices lists the GIDs a RoCE port offers, at most one per family
// and IPv4-mapped first: of each family the first entry with an address
// that is not link-local and, where typed (the table's types are known),
// whose type reads "RoCE v2".
func RoCEChoices(table []GIDEntry, typed bool) []GIDEntry {
	var v4, v6 *GIDEntry
	for i, e := range table {
		if e.Zero() || e.linkLocal() || typed && e.Type != "RoCE v2" {
			continue
		}
		switch Family(e.GID) {
		case FamilyIPv4:
			if v4 == nil {
				v4 = &table[i]
			}
		case FamilyIPv6:
			if v6 == nil {
				v6 = &table[i]
			}
		}
	}
	var out []GIDEntry
	for _, e := range []*GIDEntry{v4, v6} {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out
}

// AgreeGID picks the GIDs both ends of a connection use: the first of
// local's choices (in preference order) whose family one of remote's
// shares, with that remote GID. A remote that offered no choices (an
// older peer) offers the one GID it sent. An empty local list (an
// InfiniBand port) takes the remote GID as it is. No common family is an
// error naming every GID of both sides.
func AgreeGID(local, remote []GIDChoice) (GIDChoice, string, error) {
	if len(local) == 0 {
		if len(remote) == 0 {
			return GIDChoice{Index: -1}, "::", nil
		}
		return GIDChoice{Index: -1}, remote[0].GID, nil
	}
	for _, l := range local {
		for _, r := range remote {
			if Family(l.GID) == Family(r.GID) {
				return l, r.GID, nil
			}
		}
	}
	return GIDChoice{}, "", fmt.Errorf("rdma: connect: no GID family common to both ends: this side has %s, the peer %s; "+
		"give both ends RoCE v2 GIDs of one family (IPv4-mapped or IPv6), or pick them with --gid-index",
		listChoices(local), listChoices(remote))
}

func listChoices(cs []GIDChoice) string {
	if len(cs) == 0 {
		return "none"
	}
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, " and ")
}

// OnPeerSubnet returns the first routable RoCE v2 entry of table whose
// address is on the subnet of peer: the entry's interface (NetDev) has
// that address with a prefix that also covers peer, as nets says
// (InterfaceNets on a live machine). ok is false when none is.
func OnPeerSubnet(table []GIDEntry, peer net.IP, nets func(netdev string) []*net.IPNet) (e GIDEntry, ok bool) {
	if peer == nil {
		return GIDEntry{}, false
	}
	for _, e := range table {
		if e.Zero() || e.linkLocal() || e.Type != "RoCE v2" || e.NetDev == "" {
			continue
		}
		g, err := ParseGID(e.GID)
		if err != nil {
			continue
		}
		ip := net.IP(g[:])
		for _, n := range nets(e.NetDev) {
			if n.IP.Equal(ip) && n.Contains(peer) {
				return e, true
			}
		}
	}
	return GIDEntry{}, false
}

// InterfaceNets lists the addresses, with their prefixes, of the network
// interface named netdev; none where it cannot say.
func InterfaceNets(netdev string) []*net.IPNet {
	ifc, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var out []*net.IPNet
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n)
		}
	}
	return out
}
