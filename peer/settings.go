package peer

import (
	"strconv"
	"time"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/rdma"
)

// ClientSettings are how a client reaches kvtier serve peers and moves KV with
// them: the one type the remote tier's options and MB2's (kvtier
// transfer, mesh) share.
type ClientSettings struct {
	Transport string // tcp or verbs
	Conns     int    // parallel TCP connections or RC QPs
	// RDMADevice is the verbs device, e.g. mlx5_0; "" or "auto" picks
	// the active port nearest the GPU in use.
	RDMADevice string
	GIDIndex   int // -1 selects RoCE v2 GIDs automatically
	// IBTC and IBSL are the QPs' traffic class and service level.
	IBTC, IBSL int
	// IdleTimeout turns a peer that moves no data for that long in the
	// middle of a read into an error row (DialOptions.IdleTimeout); 0
	// waits as long as the connection lives.
	IdleTimeout time.Duration
	// Token is the run token sent to a peer started with one (kvtier
	// serve --token). The command line fills it (--token, $KVTIER_TOKEN);
	// it is never written anywhere.
	Token string
	// Library is the libibverbs the verbs transport loads ("" tries the
	// usual names); the command line fills it from KVTIER_LIBIBVERBS.
	Library string
}

// DefaultClientSettings are TCP over conns connections, the RDMA device and
// GID picked automatically, the default idle timeout.
func DefaultClientSettings(conns int) ClientSettings {
	return ClientSettings{Transport: TCP, Conns: conns, RDMADevice: rdma.AutoDevice, GIDIndex: -1, IdleTimeout: DefaultIdleTimeout}
}

// Errors returns every problem with the settings as option errors
// naming the flags: transport, conns, gid-index, ib-tc, ib-sl,
// idle-timeout.
func (s ClientSettings) Errors() []error {
	var errs []error
	if s.Transport != TCP && s.Transport != Verbs {
		errs = append(errs, option.Errorf("transport", "want tcp or verbs, got %q", s.Transport))
	}
	return append(errs, CheckQoS(s.Transport, s.IBTC, s.IBSL), option.Range("conns", s.Conns, 1, MaxConns),
		option.Range("gid-index", s.GIDIndex, -1, rdma.MaxGIDIndex, "-1: automatic"),
		option.Range("ib-tc", s.IBTC, 0, rdma.MaxTC), option.Range("ib-sl", s.IBSL, 0, rdma.MaxSL),
		option.NotNegative("idle-timeout", s.IdleTimeout, "0: none"))
}

// CheckQoS refuses a traffic class or service level (--ib-tc, --ib-sl)
// given for transport tcp, which has no queue pair to carry them: a run
// would record them as if they applied. (NCCL_IB_TC and NCCL_IB_SL are
// not read for tcp.)
func CheckQoS(transport string, tc, sl int) error {
	if transport != TCP {
		return nil
	}
	for _, q := range []struct {
		flag string
		v    int
	}{{"ib-tc", tc}, {"ib-sl", sl}} {
		if q.v != 0 {
			return option.Errorf(q.flag, "%d applies to RDMA queue pairs, and transport tcp has none (use --transport verbs, or leave it out)", q.v)
		}
	}
	return nil
}

// Record adds the settings to a manifest's settings (never the token or
// the library path).
func (s ClientSettings) Record(m map[string]string) {
	m["transport"], m["conns"], m["rdma_device"] = s.Transport, strconv.Itoa(s.Conns), s.RDMADevice
	m["gid_index"], m["idle_timeout"] = strconv.Itoa(s.GIDIndex), s.IdleTimeout.String()
	m["ib_tc"], m["ib_sl"] = strconv.Itoa(s.IBTC), strconv.Itoa(s.IBSL)
}

// RDMA returns the verbs endpoint configuration of the settings, with
// sysfs read under root.
func (s ClientSettings) RDMA(root string) rdma.Config {
	return rdma.Config{Device: s.RDMADevice, GIDIndex: s.GIDIndex, Root: root, Library: s.Library, TC: s.IBTC, SL: s.IBSL}
}
