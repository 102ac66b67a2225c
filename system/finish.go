package system

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kvtier/kvtier/results"
)

// Finish re-reads, at the end of a run and so under its load, what
// changes over the run for each GPU of m, found by PCI bus id: the
// current PCIe link (NVML, else sysfs under c.Root), the clock throttle
// reasons and the PCIe replay counter's growth. It warns of a link still
// below its max, of clocks held back by a slowdown and of replays.
func Finish(c Config, m *results.Manifest) {
	c.Root = cmp.Or(c.Root, "/")
	lib := c.nvml()
	loaded := len(m.GPUs) > 0 && lib.Init() == nvml.SUCCESS
	if loaded {
		defer lib.Shutdown()
	}
	for i := range m.GPUs {
		g := &m.GPUs[i]
		var l Link
		if loaded {
			if dev, r := lib.DeviceGetHandleByPciBusId(nvmlBusID(g.BusID)); r == nvml.SUCCESS {
				l = nvmlLink(dev)
				g.ThrottleEnd = throttleOf(dev)
				if v, r := dev.GetPcieReplayCounter(); r == nvml.SUCCESS && g.ReplayStart >= 0 {
					d := int64(v) - g.ReplayStart
					g.PCIeReplays = &d
				}
			}
		}
		if l.Gen == 0 {
			l = SysfsLink(c.Root, g.BusID)
		}
		g.PCIeGenEnd, g.PCIeWidthEnd = l.Gen, l.Width
		ws := finishWarnings(*g)
		g.Warnings = append(g.Warnings, ws...)
		m.Warnings = append(m.Warnings, ws...)
	}
}

// finishWarnings are the warnings of what Finish re-read of g.
func finishWarnings(g results.GPU) []string {
	var ws []string
	if g.PCIeGenEnd > 0 && (g.PCIeGenEnd < g.PCIeMaxGen || g.PCIeWidthEnd < g.PCIeMaxWidth) {
		ws = append(ws, fmt.Sprintf("%s: PCIe link runs at gen%d x%d under load, below its max gen%d x%d",
			GPUName(g), g.PCIeGenEnd, g.PCIeWidthEnd, g.PCIeMaxGen, g.PCIeMaxWidth))
	}
	var slow []string
	for _, r := range g.ThrottleEnd {
		if slices.Contains(slowdowns, r) {
			slow = append(slow, r)
		}
	}
	if len(slow) > 0 {
		ws = append(ws, fmt.Sprintf("%s: clocks held back at the end of the run (%s)", GPUName(g), strings.Join(slow, ", ")))
	}
	if g.PCIeReplays != nil && *g.PCIeReplays > 0 {
		ws = append(ws, fmt.Sprintf("%s: %d PCIe replays during the run (link-level retransmissions cost bandwidth)", GPUName(g), *g.PCIeReplays))
	}
	return ws
}
