package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/units"
)

func init() {
	cli.Register(&cli.Command{Name: "info", Order: 10, Run: runInfo, Usage: "Usage: kvtier info [--json]", Env: tierflag.LibraryGroup.Env,
		Summary: "what this machine has: CPU, NUMA, memory, GPUs, RDMA NICs, libraries"})
}

// runInfo prints what this machine has, as the manifest of a run would
// record it.
func runInfo(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	asJSON := fs.Bool("json", false, "print the manifest as JSON")
	root := fs.String("sys-root", "/", "root of the procfs/sysfs tree to read (for tests)")
	if code, ok := c.ParseNoArgs(fs); !ok {
		return code
	}
	m := harness.NewManifest("info", c.CommandLine(), func(m *results.Manifest) []error {
		return system.Collect(sysConfig(c, *root), m)
	}, nil)
	if *asJSON {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			c.Logf("%v", err)
			return cli.ExitFail
		}
		fmt.Fprintf(c.Stdout, "%s\n", b)
		return cli.ExitOK
	}
	printInfo(c.Stdout, m)
	return cli.ExitOK
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// printInfo prints manifest m section by section for a reader.
func printInfo(w io.Writer, m *results.Manifest) {
	fmt.Fprintf(w, "kvtier %s\n\n", m.Version)
	printHost(w, m.Host)
	printBackends(w, m.Backends)
	printGPUs(w, m.GPUs)
	printNICs(w, m.NICs)
	printDisks(w, m.Disks)
	if len(m.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings")
		for _, warn := range m.Warnings {
			fmt.Fprintf(w, "  %s\n", warn)
		}
	}
}

// printHost describes the machine: OS, CPUs, memory, Go.
func printHost(w io.Writer, h results.Host) {
	fmt.Fprintln(w, "Host")
	fmt.Fprintf(w, "  hostname   %s\n", orUnknown(h.Hostname))
	fmt.Fprintf(w, "  os         %s\n", orUnknown(h.OS))
	fmt.Fprintf(w, "  kernel     %s (%s)\n", orUnknown(h.Kernel), h.Arch)
	fmt.Fprintf(w, "  cpu        %s, %d CPUs\n", orUnknown(h.CPUModel), h.CPUs)
	fmt.Fprintf(w, "  numa       %d nodes\n", h.NUMANodes)
	mem := "unknown"
	if h.MemoryBytes > 0 {
		mem = units.FormatBytes(h.MemoryBytes)
	}
	fmt.Fprintf(w, "  memory     %s\n", mem)
	fmt.Fprintf(w, "  go         %s\n", h.GoVersion)
}

// printBackends lists the backends found and those registered.
func printBackends(w io.Writer, backends []results.BackendStatus) {
	heading(w, "Backends", len(backends))
	for _, b := range backends {
		if b.Available {
			fmt.Fprintf(w, "  %-8s available    %s\n", b.Name, b.Detail)
		} else {
			fmt.Fprintf(w, "  %-8s unavailable  %s\n", b.Name, b.Reason)
		}
	}
	fmt.Fprintf(w, "  (registered compute backends: %s; tiers: %s)\n", strings.Join(tiers.BackendNames(), ", "), strings.Join(tiers.Names(), ", "))
}

// printGPUs lists the GPUs with their driver and PCIe link.
func printGPUs(w io.Writer, gpus []results.GPU) {
	heading(w, "GPUs", len(gpus))
	for _, g := range gpus {
		fmt.Fprintf(w, "  %s  %s  %s  numa %d  %s\n", system.GPUName(g), g.Name, units.FormatBytes(g.MemoryBytes), g.NUMANode, g.UUID)
		fmt.Fprintf(w, "        driver %s, CUDA %s, PCIe gen%d x%d now (max gen%d x%d)", g.DriverVersion, g.CUDAVersion, g.PCIeGen, g.PCIeWidth, g.PCIeMaxGen, g.PCIeMaxWidth)
		if g.LinkGBps > 0 {
			fmt.Fprintf(w, ", %.1f GB/s", g.LinkGBps)
		}
		fmt.Fprintln(w)
		if st := gpuState(g); st != "" {
			fmt.Fprintf(w, "        %s\n", st)
		}
		for _, warn := range g.Warnings {
			fmt.Fprintf(w, "        warning: %s\n", warn)
		}
	}
}

// gpuState is a GPU's modes, throttle reasons and IOMMU mode where
// known: "persistence enabled, ECC enabled, MIG disabled, throttle
// gpu_idle, IOMMU identity"; "" where nothing is.
func gpuState(g results.GPU) string {
	var parts []string
	for _, kv := range [][2]string{{"persistence", g.Persistence}, {"ECC", g.ECCMode}, {"MIG", g.MIGMode},
		{"throttle", strings.Join(g.ThrottleStart, ",")}, {"IOMMU", g.IOMMUMode}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	return strings.Join(parts, ", ")
}

// printNICs lists the RDMA NICs' ports with their GIDs and GPU distances.
func printNICs(w io.Writer, nics []results.NIC) {
	heading(w, "RDMA NICs", len(nics))
	for _, n := range nics {
		fmt.Fprintf(w, "  %s port %d  %s  %s  %.0f Gb/s  mtu %d  numa %d", n.Name, n.Port, n.State, n.LinkLayer, n.RateGbps, n.MTU, n.NUMANode)
		if n.NetDev != "" {
			fmt.Fprintf(w, "  netdev %s", n.NetDev)
		}
		if n.PCIAddress != "" {
			fmt.Fprintf(w, "  pci %s", n.PCIAddress)
		}
		fmt.Fprintln(w)
		for _, gid := range n.GIDs {
			fmt.Fprintf(w, "        gid %d  %s  %s\n", gid.Index, gid.GID, gid.Type)
		}
		for _, d := range n.GPUDist {
			fmt.Fprintf(w, "        %s\n", d)
		}
	}
}

// printDisks lists the block devices a disk tier could read from.
func printDisks(w io.Writer, disks []results.Disk) {
	heading(w, "Disks", len(disks))
	for _, d := range disks {
		fmt.Fprintf(w, "  %s  %s\n", system.DiskText(d), units.FormatBytes(d.SizeBytes))
	}
}

// heading starts a section of n items: its title, and "none found" when
// n is 0.
func heading(w io.Writer, title string, n int) {
	fmt.Fprintln(w, "\n"+title)
	if n == 0 {
		fmt.Fprintln(w, "  none found")
	}
}
