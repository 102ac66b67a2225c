package results

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// A Manifest describes the run that produced a results directory: the
// machine, the devices, the software, and the exact command. It is written
// as manifest.json beside the CSV files, at start and again at the end.
type Manifest struct {
	Tool        string            `json:"tool"`    // "kvtier"
	Version     string            `json:"version"` // kvtier's git revision, "unknown" if none
	Command     []string          `json:"command"` // os.Args as given
	Suite       string            `json:"suite"`   // "sweep", "transfer", "probe", ...
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end,omitzero"` // zero while the run is going
	Interrupted bool              `json:"interrupted,omitempty"`
	Host        Host              `json:"host"`
	Backends    []BackendStatus   `json:"backends"`
	GPUs        []GPU             `json:"gpus,omitempty"`
	NICs        []NIC             `json:"nics,omitempty"`
	Disks       []Disk            `json:"disks,omitempty"`
	Settings    map[string]string `json:"settings,omitempty"` // resolved options of the command
	// Environment holds the environment variables the command read that
	// were set, by name; secrets (the run token) are "<redacted>".
	Environment map[string]string `json:"environment,omitempty"`
	Notes       map[string]any    `json:"notes,omitempty"`    // suite facts, e.g. probe client overhead
	Warnings    []string          `json:"warnings,omitempty"` // e.g. a PCIe link below its max
	Files       []string          `json:"files,omitempty"`    // what the run wrote, relative to the dir
}

// Host is the machine the run measured on.
type Host struct {
	Hostname    string `json:"hostname"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUModel    string `json:"cpu_model"`
	CPUs        int    `json:"cpus"`
	NUMANodes   int    `json:"numa_nodes"`
	MemoryBytes int64  `json:"memory_bytes"`
	GoVersion   string `json:"go_version"`
	// IOMMU is "off", or "on" with its units and the kernel's iommu=
	// options, e.g. "on (dmar0,dmar1; iommu=pt)"; "" unknown.
	IOMMU string `json:"iommu,omitempty"`
}

// BackendStatus says whether a backend or transport was found and why not.
type BackendStatus struct {
	Name      string `json:"name"` // "host", "cuda", "cublas", "nvml", "verbs", "tcp"
	Available bool   `json:"available"`
	Detail    string `json:"detail,omitempty"` // version, library path, device
	Reason    string `json:"reason,omitempty"` // why not available
}

// GPU is one GPU as NVML and the CUDA driver see it. NVML's index is not
// the CUDA ordinal (CUDA_VISIBLE_DEVICES reorders and hides devices): the
// two meet by PCI bus id, and warnings name a GPU by its CUDA ordinal
// and bus id.
type GPU struct {
	Index int `json:"index"` // NVML's index; the CUDA ordinal where NVML is absent
	// CUDAOrdinal is the GPU's ordinal as CUDA numbers it in this process
	// (what --gpu and the rows' gpu column mean); -1 when CUDA does not
	// see it.
	CUDAOrdinal   int    `json:"cuda_ordinal"`
	Name          string `json:"name"`
	UUID          string `json:"uuid"`
	BusID         string `json:"bus_id"`
	NUMANode      int    `json:"numa_node"` // -1 unknown
	MemoryBytes   int64  `json:"memory_bytes"`
	DriverVersion string `json:"driver_version"`
	CUDAVersion   string `json:"cuda_version"`
	// PCIeGen and PCIeWidth are the link as read when the run started;
	// an idle GPU may train its link down, so they may be below the max
	// without a fault.
	PCIeGen      int `json:"pcie_gen"`       // 0 unknown
	PCIeWidth    int `json:"pcie_width"`     // lanes, 0 unknown
	PCIeMaxGen   int `json:"pcie_max_gen"`   // 0 unknown
	PCIeMaxWidth int `json:"pcie_max_width"` // 0 unknown
	// PCIeGenEnd and PCIeWidthEnd are the link re-read at the end of the
	// run, under load; 0 when not re-read.
	PCIeGenEnd   int `json:"pcie_gen_end,omitempty"`
	PCIeWidthEnd int `json:"pcie_width_end,omitempty"`
	// LinkGBps is the unidirectional payload limit of the link at its
	// max generation and width (the current ones where the max is
	// unknown); 0 unknown.
	LinkGBps float64 `json:"link_gbps"`
	// PCIeSwitch is the upstream port of the PCIe switch the GPU sits
	// behind ("" when on a root port or unknown); GPUs with the same one
	// share its uplink.
	PCIeSwitch string `json:"pcie_switch,omitempty"`
	// ACS is "off", "redirect at BUS,..." (bridges above the GPU that
	// send peer-to-peer requests up to the root complex) or "unknown"
	// (PCI config space not readable: not root).
	ACS        string `json:"acs,omitempty"`
	IOMMUGroup string `json:"iommu_group,omitempty"` // "" without IOMMU translation
	// IOMMUMode is the IOMMU domain type of the GPU's group from
	// sysfs ("identity", "DMA", "DMA-FQ"); "" unknown.
	IOMMUMode     string `json:"iommu_mode,omitempty"`
	SMClockMHz    int    `json:"sm_clock_mhz,omitempty"`
	MaxSMClockMHz int    `json:"max_sm_clock_mhz,omitempty"`
	MemClockMHz   int    `json:"mem_clock_mhz,omitempty"`
	MIGMode       string `json:"mig_mode,omitempty"`         // "enabled", "disabled"; "" unknown
	Persistence   string `json:"persistence_mode,omitempty"` // "enabled", "disabled"; "" unknown
	ECCMode       string `json:"ecc_mode,omitempty"`         // "enabled", "disabled"; "" unknown
	// ThrottleStart and ThrottleEnd are NVML's clock throttle reasons
	// when the run started and when it ended ("none" when the clocks
	// were not held back); nil unknown.
	ThrottleStart []string `json:"throttle_reasons_start,omitempty"`
	ThrottleEnd   []string `json:"throttle_reasons_end,omitempty"`
	// PCIeReplays is how much the PCIe replay counter grew over the run
	// (link-level retransmissions); nil unknown.
	PCIeReplays *int64   `json:"pcie_replays,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// ReplayStart is the replay counter when the run started, -1
	// unknown; Finish takes PCIeReplays from it (not written).
	ReplayStart int64 `json:"-"`
}

// UnmarshalJSON reads a GPU; a manifest written before cuda_ordinal
// existed reads it as the GPU's index (the CUDA ordinal where NVML was
// absent, NVML's index, the best guess, otherwise).
func (g *GPU) UnmarshalJSON(b []byte) error {
	type plain GPU
	p := plain{CUDAOrdinal: math.MinInt}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.CUDAOrdinal == math.MinInt {
		p.CUDAOrdinal = p.Index
	}
	*g = GPU(p)
	return nil
}

// NIC is one RDMA device port.
type NIC struct {
	Name       string   `json:"name"` // mlx5_0
	Port       int      `json:"port"`
	State      string   `json:"state"`
	LinkLayer  string   `json:"link_layer"` // Ethernet, InfiniBand
	MTU        int      `json:"active_mtu"`
	RateGbps   float64  `json:"rate_gbps"`
	NetDev     string   `json:"netdev,omitempty"`
	PCIAddress string   `json:"pci_address,omitempty"`
	NUMANode   int      `json:"numa_node"` // -1 unknown
	GIDs       []GID    `json:"gids,omitempty"`
	GPUDist    []string `json:"gpu_distance,omitempty"` // "gpu0: same switch", ...
	NetDevMTU  int      `json:"netdev_mtu,omitempty"`   // the netdev's MTU, 0 unknown
	// PFC and Trust are the netdev's priority flow control and QoS
	// trust settings where the driver exposes them in sysfs (mlx5:
	// qos/pfc, qos/trust); "" unreadable.
	PFC   string `json:"pfc,omitempty"`
	Trust string `json:"trust,omitempty"`
}

// Disk is one block device as sysfs describes it: what a disk tier's
// reads went to.
type Disk struct {
	Name       string `json:"name"`             // vda, nvme0n1, sda
	Model      string `json:"model,omitempty"`  // "SAMSUNG MZQL27T6HBLA-00A07"
	Driver     string `json:"driver,omitempty"` // nvme, virtio_blk, sd
	NVMe       bool   `json:"nvme"`
	Rotational bool   `json:"rotational"`
	SizeBytes  int64  `json:"size_bytes"`
	Scheduler  string `json:"scheduler,omitempty"` // the active I/O scheduler: none, mq-deadline, ...
	// Queue limits of the block layer.
	NrRequests   int `json:"nr_requests,omitempty"`        // requests per hardware queue
	HWQueues     int `json:"hw_queues,omitempty"`          // hardware queues (blk-mq)
	MaxSectorsKB int `json:"max_sectors_kb,omitempty"`     // largest request the block layer sends
	LogicalBlock int `json:"logical_block_size,omitempty"` // bytes; O_DIRECT alignment
}

// GID is one entry of a port's GID table.
type GID struct {
	Index int    `json:"index"`
	GID   string `json:"gid"`
	Type  string `json:"type"` // "RoCE v2", "RoCE v1", "IB/RoCE v1"
}

// WriteManifest writes m as indented JSON to path, replacing it atomically
// so a reader never sees half a manifest.
func WriteManifest(path string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("results: manifest: %w", err)
	}
	if err := WriteBytes(path, append(b, '\n')); err != nil {
		return fmt.Errorf("results: manifest: %w", err)
	}
	return nil
}

// maxManifestBytes bounds a manifest.json a reader loads (one of a mesh
// run holds every rank's: still far below this).
const maxManifestBytes = 64 << 20

// ReadManifest reads a manifest.json.
func ReadManifest(path string) (*Manifest, error) {
	b, err := readFile(path, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	return &m, nil
}
