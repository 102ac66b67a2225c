package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// A fact is one line of a run's environment: what it is about (the host,
// GPU 0, backend cuda) and what it says.
type fact struct{ key, text string }

// facts returns the environment of a manifest, one fact per line.
// Warnings that only repeat why a backend is not available are left out:
// that is said once, with the backend.
func facts(m *results.Manifest) []fact {
	h := m.Host
	out := []fact{
		{"kvtier", OrDash(m.Version)},
		{"host", fmt.Sprintf("%s, %s %s, kernel %s, %s", OrDash(h.Hostname), OrDash(h.OS), OrDash(h.Arch), OrDash(h.Kernel), OrDash(h.GoVersion))}, // not a tier: the machine
		{"CPU", fmt.Sprintf("%s × %d, %d NUMA node(s), %s memory", OrDash(h.CPUModel), h.CPUs, h.NUMANodes, FmtBytes(float64(h.MemoryBytes)))},
	}
	if len(m.GPUs) == 0 {
		out = append(out, fact{"GPUs", "none found"})
	}
	for _, g := range m.GPUs {
		link := "link limit unknown"
		if g.LinkGBps > 0 {
			link = fmt.Sprintf("%.1f GB/s link", g.LinkGBps)
		}
		text := fmt.Sprintf("%s [%s], %s, NUMA %d, PCIe gen%d x%d (max gen%d x%d), %s, driver %s, CUDA %s",
			g.Name, g.BusID, FmtBytes(float64(g.MemoryBytes)), g.NUMANode, g.PCIeGen, g.PCIeWidth,
			g.PCIeMaxGen, g.PCIeMaxWidth, link, OrDash(g.DriverVersion), OrDash(g.CUDAVersion))
		for _, gw := range g.Warnings {
			text += "; warning: " + gw
		}
		out = append(out, fact{gpuLabel(g), text})
	}
	if len(m.NICs) == 0 {
		out = append(out, fact{"RDMA NICs", "none found"})
	}
	for _, n := range m.NICs {
		text := fmt.Sprintf("%s, %s, %g Gb/s, MTU %d, NUMA %d", OrDash(n.State), OrDash(n.LinkLayer), n.RateGbps, n.MTU, n.NUMANode)
		if n.NetDev != "" {
			text += ", netdev " + n.NetDev
		}
		out = append(out, fact{fmt.Sprintf("NIC %s port %d", n.Name, n.Port), text})
	}
	var reasons []string
	for _, b := range m.Backends {
		if b.Available {
			out = append(out, fact{"backend " + b.Name, "available" + prefixed(", ", b.Detail)})
			continue
		}
		out = append(out, fact{"backend " + b.Name, "not available: " + OrDash(b.Reason)})
		reasons = append(reasons, b.Reason)
	}
	for _, w := range m.Warnings {
		if !slices.ContainsFunc(reasons, func(r string) bool { return r != "" && strings.Contains(w, r) }) {
			out = append(out, fact{"warning", w})
		}
	}
	return out
}

// writeEnvironment says once what every run shares (host, devices,
// libraries, one line per library that did not load), then per run only
// its suite, command, time span and what differs from that.
func writeEnvironment(w io.Writer, runs []*analysis.Run) {
	Paragraph(w, "## Environment")
	var all [][]fact
	for _, r := range runs {
		if r.Manifest != nil {
			all = append(all, facts(r.Manifest))
		}
	}
	shared := sharedFacts(all)
	if len(runs) > 1 && len(shared) > 0 {
		Paragraph(w, "What every run shares:")
	}
	var loader []fact
	for _, f := range shared {
		if strings.HasPrefix(f.key, "backend ") && strings.HasPrefix(f.text, "not available: ") {
			loader = append(loader, f)
			continue
		}
		fmt.Fprintf(w, "- %s: %s\n", f.key, f.text)
	}
	if len(loader) > 0 {
		fmt.Fprintln(w, "- not available here, one line per library:")
		for _, f := range loader {
			fmt.Fprintf(w, "  - %s: %s\n", strings.TrimPrefix(f.key, "backend "), strings.TrimPrefix(f.text, "not available: "))
		}
	}
	for _, r := range runs {
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "- note on `%s`: %s\n", r.Dir, warn)
		}
	}
	fmt.Fprintln(w)
	writeRunTable(w, runs, shared)
}

// sharedFacts returns the facts every list holds, in the first's order.
func sharedFacts(all [][]fact) []fact {
	if len(all) == 0 {
		return nil
	}
	var out []fact
	for _, f := range all[0] {
		in := true
		for _, other := range all[1:] {
			in = in && slices.Contains(other, f)
		}
		if in && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// writeRunTable lists each run: its suite, command, start and duration,
// and the facts of its environment the others do not share.
func writeRunTable(w io.Writer, runs []*analysis.Run, shared []fact) {
	t := NewTable("suite", "command", "started", "took", "differs")
	t.Hoist = false
	differs := false
	for _, r := range runs {
		m := r.Manifest
		if m == nil {
			t.Add(Dash, t.Dash("no manifest.json"), Dash, Dash, "`"+r.Dir+"`")
			continue
		}
		suite := m.Suite
		if s, ok := results.LookupSuite(m.Suite); ok {
			suite = s.Title
		}
		var took string
		if m.End.IsZero() {
			took = t.Dash("not finished (no end time)")
		} else {
			took = m.End.Sub(m.Start).Round(time.Second).String()
		}
		if m.Interrupted {
			took += " " + t.Note("interrupted: the results are what was measured before the stop")
		}
		var own []string
		for _, f := range facts(m) {
			if !slices.Contains(shared, f) {
				own = append(own, f.key+": "+f.text)
			}
		}
		differs = differs || len(own) > 0
		t.Add(suite, "`"+OrDash(strings.Join(m.Command, " "))+"`", m.Start.UTC().Format("2006-01-02 15:04:05Z"), took, strings.Join(own, "; "))
	}
	if !differs {
		for i := range t.rows {
			t.rows[i] = t.rows[i][:4]
		}
		t.header = t.header[:4]
	}
	t.Write(w)
}

// gpuLabel names a GPU by its CUDA ordinal (what the rows' gpu column
// holds), by bus id where CUDA did not see it.
func gpuLabel(g results.GPU) string {
	if g.CUDAOrdinal < 0 {
		return "GPU " + g.BusID
	}
	return fmt.Sprintf("GPU %d", g.CUDAOrdinal)
}
