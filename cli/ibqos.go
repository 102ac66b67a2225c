package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
)

// ibQoSEnv maps the RDMA QoS flags to the environment variables NCCL
// users already set for the same meaning; a variable is read only when
// its flag is absent from the command line.
var ibQoSEnv = []struct {
	flag, env string
	max       int
}{
	{"ib-tc", "NCCL_IB_TC", rdma.MaxTC},
	{"ib-sl", "NCCL_IB_SL", rdma.MaxSL},
}

// AddIBQoS registers --ib-tc and --ib-sl into tc and sl.
func AddIBQoS(fs *pflag.FlagSet, tc, sl *int) {
	fs.IntVar(tc, "ib-tc", 0, "RoCE traffic class of the QPs (0-255: DSCP<<2 | ECN, e.g. 106 for DSCP 26 with ECN; default $NCCL_IB_TC, else 0)")
	fs.IntVar(sl, "ib-sl", 0, "InfiniBand service level of the QPs (0-15; default $NCCL_IB_SL, else 0)")
}

// IBQoSFromEnv sets --ib-tc and --ib-sl, where fs has them and the
// command line did not give them, from NCCL_IB_TC and NCCL_IB_SL (getenv
// reads the environment). A value that is no integer in range is an
// error naming the variable.
func IBQoSFromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	for _, q := range ibQoSEnv {
		f := fs.Lookup(q.flag)
		if f == nil || f.Changed {
			continue
		}
		v := strings.TrimSpace(getenv(q.env))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > q.max {
			return fmt.Errorf("%s=%q: want an integer 0-%d (--%s)", q.env, v, q.max, q.flag)
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("%s: %w", q.env, err)
		}
	}
	return nil
}

// Usage of the RDMA endpoint flags every command shares.
const (
	RDMADeviceUsage = "RDMA device, e.g. mlx5_0; auto: the active port nearest the GPU in use (same PCIe switch, then root complex, then NUMA node), else the first active port (column device_reason says which and why)"
	GIDIndexUsage   = "GID index (-1: RoCE v2 GIDs agreed with the peer, IPv4-mapped preferred, one family on both ends)"
)

// GPUBus is the PCI bus id of b's GPU when inUse and b is a GPU backend,
// "" otherwise: what --rdma-device auto picks the nearest port to.
func GPUBus(b tiers.Backend, inUse bool) string {
	if g, ok := b.(interface{ Info() cuda.DeviceInfo }); ok && inUse {
		return g.Info().BusID
	}
	return ""
}
